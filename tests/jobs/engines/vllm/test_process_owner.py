"""Every engine process has an owner (jobs.engines.vllm.process_owner): vLLM's EngineCore ends with the actor that
started it, even when Ray's own processes end with it, and a run ends the processes an earlier run's engines left."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from jobs.engines.vllm.process_owner import OWNER_VARIABLE, end_orphans, owner_tag

REPO = Path(__file__).resolve().parents[4]
SWEEP = f"""
name: owner
benchmarks:
  - {{name: rag_rewardbench, module: rag_rewardbench, data: ["{REPO / 'data' / 'rag_rewardbench_appendix_d.jsonl'}"]}}
models: [tiny_classifier]
storage: {{run: owner}}
"""


def _owned_by(pid: int) -> list[psutil.Process]:
    """This machine's processes whose owner is the process `pid` (by the variable its engine actor set)."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get(OWNER_VARIABLE, "").split(":")[0] == str(pid) and process.pid != pid:
                found.append(process)
        except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    return found


def _sleeper(env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], env=env)


def test_a_run_ends_the_processes_whose_engine_is_gone_and_only_those(tmp_path):
    """Gone: an owner pid that is not running, or a running pid whose start time differs (a reused pid). Kept: a
    live owner's, and a process without the variable (another user's vLLM is never ours to end)."""
    me = owner_tag(os.getpid())
    reused = f"{os.getpid()}:{float(me.split(':')[1]) - 100:.2f}"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True).stdout.strip()
    base = {k: v for k, v in os.environ.items() if k != OWNER_VARIABLE}
    orphans = [_sleeper({**base, OWNER_VARIABLE: f"{dead}:1.00"}), _sleeper({**base, OWNER_VARIABLE: reused})]
    kept = [_sleeper({**base, OWNER_VARIABLE: me}), _sleeper(base)]
    try:
        deadline = time.time() + 30
        while time.time() < deadline and not all(psutil.Process(p.pid).environ() for p in orphans + kept):
            time.sleep(0.1)
        names = [psutil.Process(p.pid).name() for p in orphans]
        lines = end_orphans()
        for process in orphans:
            assert process.wait(timeout=10) == -signal.SIGKILL
        assert [p.poll() for p in kept] == [None, None]
        assert sorted(lines) == sorted(
            f"ended {name} (pid {p.pid}, 0.0 GiB resident) that an earlier run's engine left: its engine "
            f"process {owner.split(':')[0]} is gone"
            for p, name, owner in zip(orphans, names, [f"{dead}:1.00", reused]))
        assert end_orphans() == []  # nothing left to end
    finally:
        for process in orphans + kept:
            process.kill()
            process.wait(timeout=10)


@pytest.mark.integration
def test_no_engine_core_outlives_a_driver_killed_mid_cell_with_its_engine_and_the_next_start_resumes(tmp_path):
    """`ragjudge run` on a local cluster SIGKILLed together with its vLLM engine's actor process while the cell
    runs: Ray's node processes die with the driver, so nothing of Ray's ends the EngineCore (before, it lived on
    under init with the model's memory); the kernel does. The same command then resumes and finishes."""
    (tmp_path / "sweep.yaml").write_text(SWEEP)
    command = [sys.executable, "-m", "jobs", "run", str(tmp_path / "sweep.yaml"), f"storage.root={tmp_path / 'r'}"]
    log = (tmp_path / "driver.log").open("w")
    driver = subprocess.Popen(command, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline, cores = time.time() + 600, []
        while time.time() < deadline and not cores and driver.poll() is None:
            cores = [p for child in psutil.Process(driver.pid).children(recursive=True)
                     for p in _engine_cores(child)]
            time.sleep(0.5)
        assert cores, (tmp_path / "driver.log").read_text()
        [core] = cores
        actor = core.ppid()
        assert "VllmServer" in " ".join(psutil.Process(actor).cmdline())
        os.kill(driver.pid, signal.SIGKILL)
        os.kill(actor, signal.SIGKILL)
        driver.wait(timeout=30)
        ended = time.time() + 20
        while time.time() < ended and core.is_running() and core.status() != psutil.STATUS_ZOMBIE:
            time.sleep(0.2)
        assert not core.is_running() or core.status() == psutil.STATUS_ZOMBIE, "EngineCore outlived its driver"
        # EngineCore's own children end on their own once it is gone: a model worker it was starting finds its
        # death pipe closed after it loads; multiprocessing's resource tracker once the last of them ends
        left = time.time() + 90
        while time.time() < left and _owned_by(actor):
            time.sleep(1)
        assert _owned_by(actor) == []
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
        log.close()
    again = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=900, check=False)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "[done] rag_rewardbench x tiny_classifier" in again.stdout


def _engine_cores(process: psutil.Process) -> list[psutil.Process]:
    try:
        return [process] if "EngineCore" in process.name() else []
    except psutil.NoSuchProcess:
        return []
