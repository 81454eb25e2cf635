"""vLLM's EngineCore process dies with the engine actor that started it, and one that an earlier run left is
found and ended.

vLLM starts EngineCore as a child process (multiprocessing's spawn, in a Ray actor) that does not watch its
parent. Ray ends an actor's children when it kills the actor, but not when the actor's process and Ray's own
node processes are killed at once (a local cluster's driver SIGKILLed with its workers, the OOM killer): the
EngineCore then lives on under init, holding the model's memory and its threads. Linux's PR_SET_PDEATHSIG,
set in the child, has the kernel kill it when its parent dies; vLLM has no hook that runs in the child, so
the child's entry function (`EngineCoreProc.run_engine_core`) is wrapped where the actor starts vLLM. Every
process under the actor carries OWNER_VARIABLE, the actor's pid and start time, so an orphan is told by its
owner being gone, never by its name alone (another user's vLLM on a shared node is not ours)."""
from __future__ import annotations

import ctypes
import os
import signal
import sys

import psutil

OWNER_VARIABLE = "RAGJUDGE_ENGINE_OWNER"  # "pid:start time" of the engine actor's process
PR_SET_PDEATHSIG = 1  # linux/prctl.h

_vllm_run_engine_core = None  # vLLM's own entry function, kept where it was wrapped (the actor's process)


def owner_tag(pid: int) -> str:
    """A process's identity that a reused pid cannot take: its pid and its start time (psutil's)."""
    return f"{pid}:{psutil.Process(pid).create_time():.2f}"


def own_engine_processes() -> None:
    """In an engine's actor, before vLLM starts: its children carry this process as their owner, and
    EngineCore asks the kernel to end it when this process ends."""
    global _vllm_run_engine_core
    os.environ[OWNER_VARIABLE] = owner_tag(os.getpid())
    from vllm.v1.engine.core import EngineCoreProc

    if EngineCoreProc.run_engine_core is not run_engine_core_with_owner:
        _vllm_run_engine_core = EngineCoreProc.run_engine_core
        EngineCoreProc.run_engine_core = staticmethod(run_engine_core_with_owner)


def run_engine_core_with_owner(*args, **kwargs):
    """EngineCore's entry in its own process: die with the owner (or exit if it is already gone), then vLLM's."""
    die_with_parent()
    run = _vllm_run_engine_core  # set when this process was forked from the actor; spawned, vLLM's is unwrapped
    if run is None:
        from vllm.v1.engine.core import EngineCoreProc

        run = EngineCoreProc.run_engine_core
    return run(*args, **kwargs)


def die_with_parent() -> None:
    """The kernel sends this process SIGKILL when its parent ends (Linux; elsewhere nothing is set); if the
    parent named in OWNER_VARIABLE ended before this call, exit now."""
    if not sys.platform.startswith("linux"):
        return
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    owner = os.environ.get(OWNER_VARIABLE, "")
    if owner and os.getppid() != int(owner.split(":")[0]):
        os._exit(1)


def end_orphans() -> list[str]:
    """End this machine's processes that an engine actor of ours started and whose actor is gone; a line for
    each. Processes of other users, and those without OWNER_VARIABLE, are never touched."""
    lines = []
    for process in psutil.process_iter(["pid", "name", "memory_info"]):
        try:
            owner = process.environ().get(OWNER_VARIABLE)
        except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess, OSError):
            continue
        if not owner or process.pid == os.getpid() or _alive(owner):
            continue
        resident = (process.info["memory_info"].rss if process.info["memory_info"] else 0) / 2**30
        try:
            process.kill()
        except psutil.NoSuchProcess:
            continue
        lines.append(f"ended {process.info['name']} (pid {process.pid}, {resident:.1f} GiB resident) that an "
                     f"earlier run's engine left: its engine process {owner.split(':')[0]} is gone")
    return lines


def _alive(owner: str) -> bool:
    pid, _, started = owner.partition(":")
    try:
        return f"{psutil.Process(int(pid)).create_time():.2f}" == started
    except (psutil.NoSuchProcess, ValueError):
        return False
