"""A sweep on several Ray nodes (issue 28, items 1 and 2): a head with no CPUs and two workers, each its own raylet
and object store (ray.cluster_utils.Cluster, through scripts/multinode.py in a process of its own); the node under
the running engine is removed after the engine's first answered batch. The cell finishes with every request
stored once, the engine's two starts and the dead node are in manifest.json, and the metrics equal those of the
same sweep on one node."""
from __future__ import annotations

import json

import pytest
from sweeps import write_sweep

from benchmarks.rag_rewardbench import synthetic
from scripts.multinode import TINY, join_sweep, run
from scripts.same_metrics import run_differences


@pytest.mark.integration
def test_losing_the_engines_node_mid_cell_restarts_it_elsewhere_and_changes_no_answer(tmp_path):
    pairs = list(synthetic.generate(scale=0.25, max_pairs=12))
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps(p) + "\n" for p in pairs))
    sweep = write_sweep(tmp_path, "nodes", [TINY], f'root: "{tmp_path / "results"}"', data=data)

    one = run(tmp_path, sweep, "one_node", "4")
    lost = run(tmp_path, sweep, "node_lost", "0,2,2", "--lose-engine-node")

    assert one["status"] == lost["status"] == 0
    cell = "benchmark=rag_rewardbench/model=tiny_tf"
    assert one["stored"][cell] == lost["stored"][cell] == {"distinct": 2 * len(pairs), "twice": 0}
    [engine] = lost["engines"]
    first, second = (start["node_id"] for start in engine["nodes"])
    workers = lost["nodes"]["workers"]
    assert engine["starts"] == 2 and first == lost["lost_node"] and engine["lost_nodes"] == [first]
    assert first in workers and second in workers and second != first  # never the head, which has no CPUs
    assert 0 < lost["answered_before_loss"] < 2 * len(pairs) and lost["recovery_s"] > 0
    # the driver said that the engine was restarting, and when it was back (jobs.engines.host)
    assert any(line.endswith(" s of restarting") and ": back after " in line for line in lost["restart_lines"]), lost
    assert one["restart_lines"] == []
    count, differences = run_differences(tmp_path / "results" / "one_node", tmp_path / "results" / "node_lost")
    assert count == 1 and differences == []


@pytest.mark.integration
@pytest.mark.slow  # 204 s in CI on 2 cores (both engines on the same 2 cores); `make test-slow` runs it
def test_a_node_that_joins_mid_sweep_takes_the_waiting_cells_engine(tmp_path):
    """Two models whose engines take 2 CPUs each on one worker of 3: the second cell waits for room. A node of 3
    CPUs joins once the first engine has started; the second engine can only be placed there. The same sweep on
    one worker alone, for its wall time beside this one's: perf/node_join.py."""
    joined = run(tmp_path, join_sweep(tmp_path), "node_joined", "0,3", "--join", "3")

    assert joined["status"] == 0
    assert [len(e["nodes"]) for e in joined["engines"]] == [1, 1]
    assert {e["nodes"][0]["node_id"] for e in joined["engines"]} == {joined["nodes"]["workers"][0],
                                                                     joined["joined_node"]}
    assert {cell["status"] for cell in joined["cells"].values()} == {"done"}
    # the two models are one model under two names: where their engines ran changes none of their numbers
    metrics = sorted(tmp_path.glob("results/node_joined/metrics/*/*/metrics.json"))
    first, second = (json.loads(path.read_text()) for path in metrics)
    assert {k: v for k, v in first.items() if k != "model"} == {k: v for k, v in second.items() if k != "model"}
