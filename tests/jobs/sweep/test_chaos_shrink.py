"""The shrink fault of the chaos harness (issue 64, tests/chaos_shrink.py) on seeds 1-3, one of each class: the
cluster shrunk below a waiting engine's needs and never grown back (its cell fails in time, naming what the
engine needs and what the cluster has free; the other cell is whole; the same command resumes once the node is
back), grown back by a node too small for it (the same), and grown back inside the bound (the engine starts,
the run ends 0). `make chaos-shrink` runs 10 seeds."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
HARNESS = Path(__file__).resolve().parents[2] / "chaos_shrink.py"


@pytest.mark.timeout(1200)
def test_each_shrink_class_fails_in_time_or_resumes_and_the_rest_is_whole(tmp_path):
    out = tmp_path / "shrink.json"
    done = subprocess.run([sys.executable, str(HARNESS), str(out), "--seeds", "3", "--first", "1"],
                          capture_output=True, text=True, timeout=1100, check=False)
    print(done.stdout[-2000:])
    said = json.loads(out.read_text())
    assert {s["class"] for s in said["seeds"]} == {"back", "never", "too_small"}
    problems = [f"seed {s['seed']} ({s['class']}): {p}" for s in said["seeds"] for p in s["problems"]]
    assert done.returncode == 0 and not problems, "\n".join(problems) or done.stdout[-3000:] + done.stderr[-3000:]
