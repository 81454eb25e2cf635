"""A sweep on a real multi-node Ray cluster on this machine (ray.cluster_utils.Cluster: a raylet and an object
store per node), run as a script so its cluster is the process's only one (the test session has its own).

    python scripts/multinode.py OUT.json --sweep SWEEP.yaml --layout 0,2,2 [--lose-engine-node | --join CPUS]
        [key=value ...]

`--layout` gives each node's CPUs, the head first (0: nothing of the sweep runs on the head). With
`--lose-engine-node` a watcher removes the node that holds the sweep's first engine once the engine has
answered its first batch, while the cell is still answering; with `--join CPUS` a node of CPUS joins once the
first engine has started. The sweep's driver is `ragjudge run` in a process of its own. OUT.json gets the exit status, the manifest's engines, each cell's stored request ids
counted, the nodes, the wall time, and the seconds from the node's loss to the next answered batch.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

OBJECT_STORE = 200 * 1024 * 1024  # per node: the sweep's rows are small
ROOT = Path(__file__).resolve().parents[1]
# Transformers engines start in seconds: the node's loss and the engine's restart are what is tested, and they
# are the same Ray actor restart for a vLLM engine (jobs.engines.host).
TINY = '{name: tiny_tf, path: "builtin:tiny-random-classifier", kind: discriminative, engine: transformers, batch_size: 4}'


def run(folder: Path, sweep: Path, name: str, layout: str, *flags: str) -> dict[str, Any]:
    """One run of `sweep` by this script in a process of its own, as storage.run=`name`, without the answer
    store (the engines are what is compared): what it wrote to its OUT.json."""
    out = folder / f"{name}.json"
    done = subprocess.run([sys.executable, __file__, str(out), "--sweep", str(sweep), "--layout", layout, *flags,
                           f"storage.run={name}", "storage.answer_cache=false"],
                          capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0 and out.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(out.read_text())


def join_sweep(folder: Path) -> Path:
    """Two models whose engines take 2 CPUs each, over 132 synthetic pairs (6 of each Table 4 subset): on one
    worker of 3 CPUs the second cell waits for room until a node joins. The sweep file is written into
    FOLDER/conf/sweeps/, where load_sweep looks for it."""
    from benchmarks.rag_rewardbench import synthetic

    data = folder / "pairs.jsonl"
    data.write_text("".join(json.dumps(p) + "\n" for p in synthetic.generate(scale=0.25, max_pairs=6)))
    models = [TINY.replace("tiny_tf", name).replace("batch_size: 4", "batch_size: 4, num_cpus: 2")
              for name in ("tiny_a", "tiny_b")]
    path = folder / "conf" / "sweeps" / "join.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(["name: join", "benchmarks:",
                               f'  - {{name: rag_rewardbench, module: rag_rewardbench, data: ["{data}"]}}',
                               "models:", *(f"  - {model}" for model in models),
                               f'storage: {{run: join, root: "{folder / "results"}"}}']) + "\n")
    return path


def start_cluster(cpus: list[int]) -> Any:
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": cpus[0], "object_store_memory": OBJECT_STORE, "include_dashboard": False})
    for n in cpus[1:]:
        cluster.add_node(num_cpus=n, object_store_memory=OBJECT_STORE)
    cluster.wait_for_nodes()
    return cluster


def _ledger() -> Any:
    """The sweep driver's ledger actor (in the driver's own namespace), once it exists."""
    import ray

    found = [a for a in ray.util.list_named_actors(all_namespaces=True) if a["name"].endswith("-ledger")]
    return ray.get_actor(found[0]["name"], namespace=found[0]["namespace"]) if found else None


def _entries() -> dict[str, Any]:
    import ray

    ledger = _ledger()
    return ray.get(ledger.read.remote()) if ledger else {}


def lose_engine_node(cluster: Any, said: dict[str, Any], driver: subprocess.Popen) -> None:
    """Remove the node under the first engine that has answered a batch; time until it answers again."""
    while driver.poll() is None:
        busy = [(key, e) for key, e in _entries().items() if e["requests"] > 0 and e["nodes"]]
        if busy:
            key, entry = busy[0]
            node_id, answered = entry["nodes"][-1]["node_id"], entry["requests"]
            lost_at = time.monotonic()
            cluster.remove_node(next(n for n in cluster.worker_nodes if n.node_id == node_id))
            said.update(lost_node=node_id, answered_before_loss=answered)
            while driver.poll() is None:  # recovery: the restarted engine answers its next batch
                entry = _entries()[key]
                if entry["starts"] > 1 and entry["requests"] > answered:
                    said["recovery_s"] = round(time.monotonic() - lost_at, 1)
                    return
                time.sleep(0.5)
            return
        time.sleep(0.2)


def join_node(cluster: Any, said: dict[str, Any], driver: subprocess.Popen, cpus: int) -> None:
    """Add a node of `cpus` CPUs once the sweep's first engine has started (cells are then waiting for room)."""
    started = time.monotonic()
    while driver.poll() is None:
        if any(e["starts"] for e in _entries().values()):
            node = cluster.add_node(num_cpus=cpus, object_store_memory=OBJECT_STORE)
            said.update(joined_node=node.node_id, joined_after_s=round(time.monotonic() - started, 1))
            return
        time.sleep(0.2)


def stored_request_ids(results: Path) -> dict[str, dict[str, int]]:
    """Per cell folder: request ids stored more than once, and how many distinct ones, from the parts."""
    import pyarrow.parquet as pq

    out = {}
    for cell in sorted(results.glob("requests/benchmark=*/model=*")):
        ids = Counter(i for part in cell.glob("*.parquet") for i in pq.read_table(part, columns=["request_id"])
                      .column("request_id").to_pylist())
        out[f"{cell.parent.name}/{cell.name}"] = {"distinct": len(ids), "twice": sum(1 for n in ids.values() if n > 1)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--sweep", required=True)
    parser.add_argument("--layout", default="0,2,2")
    watch = parser.add_mutually_exclusive_group()
    watch.add_argument("--lose-engine-node", action="store_true")
    watch.add_argument("--join", type=int, metavar="CPUS")
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_intermixed_args()
    import ray

    from jobs.loading import load_sweep

    cluster = start_cluster([int(n) for n in args.layout.split(",")])
    said: dict[str, Any] = {"nodes": {"head": cluster.head_node.node_id,
                                      "workers": [n.node_id for n in cluster.worker_nodes]}}
    overrides = [*args.overrides, f"cluster.address={cluster.address}"]
    started = time.monotonic()
    # The driver in a process of its own, as `ragjudge run` on a cluster's head; this one's main thread adds and
    # removes nodes (adding one installs signal handlers, which Python allows in the main thread only).
    console = Path(args.out).with_suffix(".console.log").open("w")
    driver = subprocess.Popen([sys.executable, "-m", "jobs", "run", args.sweep, *overrides], cwd=ROOT,
                              stdout=console, stderr=subprocess.STDOUT)
    try:
        if args.lose_engine_node or args.join:
            ray.init(address=cluster.address, log_to_driver=False)
            if args.lose_engine_node:
                lose_engine_node(cluster, said, driver)
            else:
                join_node(cluster, said, driver, args.join)
        said["status"] = driver.wait()
    finally:
        said["wall_s"] = round(time.monotonic() - started, 1)
        driver.kill()
        console.close()
        ray.shutdown()
        cluster.shutdown()
    sweep = load_sweep(args.sweep, overrides)
    results = Path(sweep.storage.root) / sweep.storage.run
    manifest = json.loads((results / "manifest.json").read_text())
    said.update(engines=manifest.get("engines"), cells=manifest.get("cells"), stored=stored_request_ids(results),
                restart_lines=[line for line in Path(console.name).read_text().splitlines()
                               if " restarting (" in line or "of restarting" in line])
    Path(args.out).write_text(json.dumps(said, indent=2, default=str))


if __name__ == "__main__":
    sys.path[0] = str(ROOT)  # the checkout, whose packages this script imports
    main()
