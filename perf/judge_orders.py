"""What judging both orders costs over one order: uncached prompt tokens and wall time, same pairs, same judge.

RAG-RewardBench asks a generative judge each pair twice, responses swapped (docs/protocols.md 1). The two
prompts share the system prompt and the RAG prompt, and each request's verdict part (after the prefilled
"Choose ") shares its text part whole; our engines get them next to each other so vLLM's prefix cache serves
the shared part once. This measures it through the pipeline's own engine path (jobs.engines.answer_requests:
Ray Data, the sweep's long-lived engine, its ledger), each side on a fresh engine so no cache carries over, on
Table-4-shaped synthetic pairs (perf/workload.py). Wall time counts from the first request to the last
answer, without the engine's start.
Usage: python perf/judge_orders.py [--scale 0.25 --max-pairs 2]
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from workload import ROOT, add_workload_args, describe, make_pairs


def judge_side(requests: list[dict], judge) -> dict:
    from jobs.engines.answering import answer_requests
    from jobs.engines.host import EngineHost

    host = EngineHost(log=lambda *_: None)
    start = time.perf_counter()
    answers = list(answer_requests(requests, judge, host=host))
    seconds = time.perf_counter() - start
    engine = host.close()[0]
    return {"requests": len(answers), "errors": sum(bool(a.get("error")) for a in answers),
            "seconds": seconds - engine["start_s"], "engine_start_s": engine["start_s"],
            "busy_s": engine["busy_s"], "prompt_tokens": engine["prompt_tokens"],
            "cached_prompt_tokens": engine["cached_prompt_tokens"],
            "uncached_prompt_tokens": engine["prompt_tokens"] - engine["cached_prompt_tokens"],
            "generated_tokens": engine["generated_tokens"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    add_workload_args(parser)
    args = parser.parse_args()
    import ray

    from benchmarks import rag_rewardbench as rb
    from jobs.loading import load_model

    judge = load_model("smollm2_judge", "perf", [ROOT / "conf"])
    ray.init(address="local", include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    with tempfile.TemporaryDirectory() as tmp:
        items = list(rb.load_items(str(make_pairs(Path(tmp), args))))
    both = [request for item in items for request in rb.expand(item, "generative")]
    first = next(iter(rb.ORDERS))
    sides = {"one_order": judge_side([r for r in both if r["variant"] == first], judge),
             "both_orders": judge_side(both, judge)}
    one, two = sides["one_order"], sides["both_orders"]
    print(json.dumps({"workload": describe(args), "pairs": len(items), **sides,
                      "uncached_prompt_tokens_ratio": round(two["uncached_prompt_tokens"] /
                                                            one["uncached_prompt_tokens"], 3),
                      "prompt_tokens_ratio": round(two["prompt_tokens"] / one["prompt_tokens"], 3),
                      "wall_time_ratio": round(two["seconds"] / one["seconds"], 3)}, indent=2))


if __name__ == "__main__":
    main()
