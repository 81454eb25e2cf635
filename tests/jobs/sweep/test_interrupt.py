"""jobs.sweep.interrupt.answered_parts without Ray: parts of answers as they stream in; a stop reaches a cell whose
engine is silent, and the answers it holds come out as one last part; past the grace period, the give-up hooks
are bounded. (Real signals to a real driver:
test_signals.py.)"""
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from jobs.sweep.interrupt import Interrupted, Stop, answered_parts


def _engine(answers: int, then: threading.Event):
    """`answers` rows at once, then silence until `then` is set (an engine holding its next request)."""
    yield from ({"request_id": str(i)} for i in range(answers))
    then.wait(timeout=30)
    yield {"request_id": "late"}


def test_parts_of_size_then_the_rest():
    never = threading.Event()
    never.set()
    parts = list(answered_parts(_engine(5, never), 2, Stop()))
    assert [[row["request_id"] for row in part] for part in parts] == [["0", "1"], ["2", "3"], ["4", "late"]]


def test_a_stop_while_the_engine_is_silent_yields_the_answers_held_then_interrupts():
    held, stop = threading.Event(), Stop()
    parts = answered_parts(_engine(5, held), 4, stop)
    assert [row["request_id"] for row in next(parts)] == ["0", "1", "2", "3"]
    threading.Timer(0.3, stop.request, args=(signal.SIGTERM,)).start()
    start = time.perf_counter()
    assert [row["request_id"] for row in next(parts)] == ["4"]  # held, though the part is not full
    with pytest.raises(Interrupted, match="SIGTERM"):
        next(parts)
    assert time.perf_counter() - start < 10  # a hang guard: the engine is silent for 30 s
    held.set()
    assert stop.exit_code == 143 and stop.record()["signal"] == "SIGTERM"


def test_a_part_is_stored_once_its_first_answer_has_waited_flush_s_while_the_engine_is_silent():
    held = threading.Event()
    parts = answered_parts(_engine(3, held), 100, Stop(), seconds=0.5)
    start = time.perf_counter()
    assert [row["request_id"] for row in next(parts)] == ["0", "1", "2"]  # 3 of 100: due, not full
    waited = time.perf_counter() - start
    held.set()
    assert [row["request_id"] for row in next(parts)] == ["late"]
    assert list(parts) == []
    assert 0.4 <= waited < 10  # not before it was due (the engine stays silent for 30 s)


def test_an_engine_error_is_raised_in_the_cells_thread():
    def failing():
        yield {"request_id": "0"}
        raise RuntimeError("engine died")

    with pytest.raises(RuntimeError, match="engine died"):
        list(answered_parts(failing(), 8, Stop()))


GIVE_UP = """
import os, signal, sys, time
from jobs.sweep import interrupt
interrupt.GIVE_UP_S = 1.0

def hangs():
    time.sleep(60)

with interrupt.stop_on_signals(0.5, lambda: print("lease given back", flush=True)) as stop:
    stop.at_give_up(lambda: print("engines recorded", flush=True))
    stop.at_give_up(hangs)
    stop.at_give_up(lambda: 1 / 0)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(60)  # a cell that never stops
"""


def test_past_the_grace_period_the_hooks_run_bounded_then_the_lease_is_given_back():
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", GIVE_UP], check=False, capture_output=True, text=True, timeout=50,
                         cwd=Path(__file__).resolve().parents[3])
    assert out.returncode == 143, out.stderr
    assert out.stdout.splitlines() == ["engines recorded", "lease given back"], (out.stdout, out.stderr)
    assert "hangs still running after 1 s; left" in out.stderr
    assert "while exiting: ZeroDivisionError" in out.stderr
    assert time.perf_counter() - start < 40  # neither the cell's 60 s nor the hung hook's


def test_a_finished_sweep_leaves_no_give_up_hook_behind(tmp_path, monkeypatch):
    """run_sweep's hook records the engines past the grace period; once the sweep has written them, a grace
    period running out later (the report, Ray's shutdown) must not write the closed host's empty accounting
    over them."""
    from stand_in import stand_in_engine
    from sweeps import write_sweep

    from jobs.loading import load_sweep
    from jobs.sweep import pipeline

    stand_in_engine(monkeypatch)
    monkeypatch.setattr(pipeline, "largest_gpu_node", lambda: 0.0)
    monkeypatch.setattr(pipeline, "_cluster_capacity", lambda: {"CPU": 2.0, "GPU": 0.0})
    echo = "{name: echo, path: none, kind: generative, engine: stand_in}"
    sweep = load_sweep(write_sweep(tmp_path, "hooks", [echo]), [f"storage.root={tmp_path}"])
    stop = Stop()
    [outcome] = pipeline.run_sweep(sweep, log=lambda line: None, stop=stop)
    assert outcome.status == "done" and stop.give_up_hooks == []
