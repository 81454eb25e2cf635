"""A node joining mid-sweep, against the same sweep without it: wall time, one run of each (issue 28, item 3).

    python perf/node_join.py

The sweep of tests/jobs/sweep/test_multinode.py's join test (scripts/multinode.py `join_sweep`): two tiny classifiers
whose engines take 2 CPUs each. Baseline: a head with no CPUs and one worker of 3, so the second cell waits for
the first engine's release. Joined: the same, and a worker of 3 CPUs added once the first engine has started,
where the second engine is placed. Every local "node" shares this machine's cores, so the ratio says what the
join costs here (a raylet's start, two engines on the same cores), not the speed-up on real nodes; the time to
the join is the figure that carries over.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout, not an installed copy

from scripts.multinode import join_sweep, run


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        sweep = join_sweep(Path(folder))
        alone = run(Path(folder), sweep, "one_worker", "0,3")
        joined = run(Path(folder), sweep, "node_joined", "0,3", "--join", "3")
    print(f"one worker of 3 CPUs, the cells one after the other: {alone['wall_s']} s")
    print(f"a node of 3 CPUs joined {joined['joined_after_s']} s in, the cells side by side: {joined['wall_s']} s")
    print(f"joined / alone: {joined['wall_s'] / alone['wall_s']:.2f}x")


if __name__ == "__main__":
    main()
