"""A real SIGTERM and a real SIGINT sent to a real `ragjudge run` driver mid-cell, then the same command again.

The cell's judge is a loopback API server that answers the first ANSWERED requests at once and holds every
later one, so at the signal the driver has answers it has not stored yet (`flush_every` is larger than the
cell, and the signal comes before `flush_s`) and one request in flight. The server counts what it is asked across both runs: a request answered
before the signal is stored and never asked again; the only re-ask is the request in flight.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from typing import ClassVar

import pytest
import ray
from fault_rows import record
from loopback import JsonHandler, chat_completion, serving
from sweeps import write_sweep

from jobs.store.lease import LEASE
from jobs.store.run_root import open_run

pytestmark = pytest.mark.integration

ANSWERED = 5  # requests the server answers before it holds the rest
REQUESTS = 12  # the sample's 6 pairs, each in both orders
GRACE_S = 20.0
CELL = "rag_rewardbench/held"
# One request per batch: each answer reaches the driver as soon as the server gives it.
HELD = ("{name: held, path: held, kind: api, engine: http, api: {base_env: RAGJUDGE_TEST_HELD_BASE, "
        "key_env: RAGJUDGE_TEST_HELD_KEY, max_concurrency: 1}, max_new_tokens: 4, batch_size: 1, "
        "num_cpus: 0.25}")


class _Held(JsonHandler):
    """Chat completions: the first ANSWERED at once, later ones once `released` is set; `asked` counts each
    distinct conversation."""

    asked: ClassVar[Counter] = Counter()
    lock = threading.Lock()
    released = threading.Event()

    def do_POST(self) -> None:  # http.server's method name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.lock:
            self.asked[json.dumps(body["messages"], sort_keys=True)] += 1
            answer_now = sum(self.asked.values()) <= ANSWERED
        if not answer_now:
            self.released.wait(timeout=300)
        try:
            self._reply(200, chat_completion(body["model"], "Choose 1"))
        except (BrokenPipeError, ConnectionResetError):  # held past the first driver's exit
            pass

    @classmethod
    def total(cls) -> int:
        with cls.lock:
            return sum(cls.asked.values())


@pytest.fixture
def held_api():
    _Held.asked.clear()
    _Held.released.clear()
    with serving(_Held, _Held.released) as base:
        yield {"RAGJUDGE_TEST_HELD_BASE": base, "RAGJUDGE_TEST_HELD_KEY": "sk-held-0123456789"}


def driver(sweep_file, root: str, env: dict) -> subprocess.Popen:
    env = {**os.environ, "RAY_ADDRESS": ray.get_runtime_context().gcs_address, **env}
    return subprocess.Popen([sys.executable, "-m", "jobs", "run", str(sweep_file), f"storage.root={root}"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _interrupt_mid_cell(process: subprocess.Popen, signum: int) -> tuple[int, float]:
    """Wait until the server answered ANSWERED requests and holds the next, then send `signum`: how many it
    had been asked, and the seconds from the signal to the driver's exit (a hang past GRACE_S + 60 s fails)."""
    while _Held.total() <= ANSWERED:
        assert process.poll() is None, process.communicate()
        time.sleep(0.1)
    time.sleep(2.0)  # the answers given travel on to the driver, where they wait for a part to fill
    asked = _Held.total()
    sent = time.perf_counter()
    process.send_signal(signum)
    try:
        process.wait(timeout=GRACE_S + 60)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        pytest.fail(f"the driver had not exited {GRACE_S + 60:g} s after {signal.Signals(signum).name}:\n"
                    f"{out[-3000:]}\n{err[-3000:]}")
    return asked, time.perf_counter() - sent


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_mid_cell_stores_the_answers_and_the_rerun_resumes(ray_session, held_api, tmp_path, signum):
    name = signal.Signals(signum).name
    sweep = write_sweep(tmp_path, "signals", [HELD], storage=f"grace_s: {GRACE_S}")
    root = str(tmp_path / "results")
    run = open_run(f"{root}/signals")
    first = driver(sweep, root, held_api)
    asked_first, exit_s = _interrupt_mid_cell(first, signum)
    out, err = first.communicate()
    stored = [row["request_id"] for row in run.read_rows("requests", "rag_rewardbench", "held")]
    assert first.returncode == 128 + signum, (f"exit {first.returncode}, {len(stored)} answers stored\n"
                                              f"{out[-3000:]}\n{err[-3000:]}")
    assert len(stored) == ANSWERED == len(set(stored)), (stored, out, err)  # all the driver had, none held back
    cell = run.read_json("manifest.json")["cells"][CELL]
    assert cell["status"] == "interrupted" and cell["signal"] == name, cell
    assert "[interrupted] rag_rewardbench x held" in out, out
    assert run.read_json(LEASE) is None, "the lease is given back"

    _Held.released.set()
    rerun, start = driver(sweep, root, held_api), time.perf_counter()
    out, err = rerun.communicate(timeout=600)
    recovered_s = time.perf_counter() - start
    assert rerun.returncode == 0, out + err
    assert f"{len(stored)} requests already answered, {REQUESTS - len(stored)} to go" in out, out
    answers = [row["request_id"] for row in run.read_rows("requests", "rag_rewardbench", "held")]
    assert len(answers) == REQUESTS == len(set(answers))
    reasked = sum(n - 1 for n in _Held.asked.values())
    assert len(_Held.asked) == REQUESTS and max(_Held.asked.values()) <= 2, _Held.asked
    assert reasked == asked_first - len(stored), "only the requests not stored at the signal are asked again"

    _Held.asked.clear()
    clean_root = str(tmp_path / "clean")
    clean = driver(sweep, clean_root, held_api)
    out, err = clean.communicate(timeout=600)
    assert clean.returncode == 0, out + err
    metrics = run.metrics_path("rag_rewardbench", "held")
    assert run.read_json(metrics) == open_run(f"{clean_root}/signals").read_json(metrics)
    print(f"signal row: {name}: {asked_first} asked before the signal, {len(stored)} stored, "
          f"{asked_first - len(stored)} in flight; exit {first.returncode} {exit_s:.2f} s after the signal; "
          f"rerun {recovered_s:.1f} s; lost 0, duplicated in storage {len(answers) - len(set(answers))}, "
          f"asked twice {reasked}")
    record(tmp_path, fault=f"{name} to the driver mid-cell (local)",
           injected=f"{name} once a loopback API judge answered {ANSWERED} of {REQUESTS} requests and holds the "
                    f"next (storage.flush_every 1024, flush_s 5: none stored yet); the same command rerun",
           outcome=f"the answered {len(stored)} are stored as one part, the cell is `interrupted` in "
                   f"manifest.json, the lease given back, exit {first.returncode} in {exit_s:.1f} s; the rerun asks "
                   f"the other {REQUESTS - len(stored)} ({reasked} of them asked before), metrics equal an "
                   "uninterrupted run's (time: the rerun)",
           requests_lost=REQUESTS - len(set(answers)), requests_duplicated=len(answers) - len(set(answers)),
           time_to_recover_s=round(recovered_s, 1))
