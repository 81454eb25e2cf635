"""A sweep on several Ray nodes (issue 28, items 1 and 2): a head with no CPUs and two workers, each its own raylet
and object store (ray.cluster_utils.Cluster, through tests/multinode.py in a process of its own); the node under
the running engine is removed after the engine's first answered batch. The cell finishes with every request
stored once, the engine's two starts and the dead node are in manifest.json, and the metrics equal those of the
same sweep on one node."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sweeps import write_sweep

from benchmarks.rag_rewardbench import synthetic
from scripts.same_metrics import run_differences

SCRIPT = Path(__file__).resolve().parents[1] / "multinode.py"
# Transformers engines start in seconds: the node's loss and the engine's restart are what is tested, and they
# are the same Ray actor restart for a vLLM engine (jobs.engines.host).
MODEL = '{name: tiny_tf, path: "builtin:tiny-random-classifier", kind: discriminative, engine: transformers, batch_size: 4}'


def _run(tmp_path: Path, sweep: Path, name: str, layout: str, *flags: str) -> dict:
    """One run of the sweep by tests/multinode.py; runs under one root each ask their engines everything (no
    answer store), since the engines are what is compared."""
    out = tmp_path / f"{name}.json"
    done = subprocess.run([sys.executable, str(SCRIPT), str(out), "--sweep", str(sweep), "--layout", layout, *flags,
                           f"storage.run={name}", "storage.answer_cache=false"],
                          capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0 and out.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(out.read_text())


@pytest.mark.integration
def test_losing_the_engines_node_mid_cell_restarts_it_elsewhere_and_changes_no_answer(tmp_path):
    pairs = list(synthetic.generate(scale=0.25, max_pairs=12))
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps(p) + "\n" for p in pairs))
    sweep = write_sweep(tmp_path, "nodes", [MODEL], f'root: "{tmp_path / "results"}"', data=data)

    one = _run(tmp_path, sweep, "one_node", "4")
    lost = _run(tmp_path, sweep, "node_lost", "0,2,2", "--lose-engine-node")

    assert one["status"] == lost["status"] == 0
    cell = "benchmark=rag_rewardbench/model=tiny_tf"
    assert one["stored"][cell] == lost["stored"][cell] == {"distinct": 2 * len(pairs), "twice": 0}
    [engine] = lost["engines"]
    first, second = (start["node_id"] for start in engine["nodes"])
    workers = lost["nodes"]["workers"]
    assert engine["starts"] == 2 and first == lost["lost_node"] and engine["lost_nodes"] == [first]
    assert first in workers and second in workers and second != first  # never the head, which has no CPUs
    assert 0 < lost["answered_before_loss"] < 2 * len(pairs) and lost["recovery_s"] > 0
    count, differences = run_differences(tmp_path / "results" / "one_node", tmp_path / "results" / "node_lost")
    assert count == 1 and differences == []


@pytest.mark.integration
def test_a_node_that_joins_mid_sweep_takes_the_waiting_cells_engine(tmp_path):
    """Two models whose engines take 2 CPUs each on one worker of 3: the second cell waits for room. A node of 3
    CPUs joins once the first engine has started; the second engine can only be placed there."""
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps(p) + "\n" for p in synthetic.generate(scale=0.25, max_pairs=6)))
    models = [MODEL.replace("tiny_tf", name).replace("batch_size: 4", "batch_size: 4, num_cpus: 2")
              for name in ("tiny_a", "tiny_b")]
    sweep = write_sweep(tmp_path, "join", models, f'root: "{tmp_path / "results"}"', data=data)

    alone = _run(tmp_path, sweep, "one_worker", "0,3")
    joined = _run(tmp_path, sweep, "node_joined", "0,3", "--join", "3")

    assert alone["status"] == joined["status"] == 0
    assert [len(e["nodes"]) for e in joined["engines"]] == [1, 1]
    assert {e["nodes"][0]["node_id"] for e in joined["engines"]} == {joined["nodes"]["workers"][0],
                                                                     joined["joined_node"]}
    print(f"wall time: {alone['wall_s']} s on one worker, {joined['wall_s']} s with a node joined after "
          f"{joined['joined_after_s']} s")  # for docs/scale.md; timings are not asserted
    count, differences = run_differences(tmp_path / "results" / "one_worker", tmp_path / "results" / "node_joined")
    assert count == 2 and differences == []
