"""jobs.sweep.interrupt without Ray: past the grace period, the give-up hooks are bounded; a finished sweep leaves
none behind. (Real signals to a real driver: test_signals.py.)"""
import subprocess
import sys
import time
from pathlib import Path

from jobs.sweep.interrupt import Stop

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
