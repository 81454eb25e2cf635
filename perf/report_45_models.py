"""How long `ragjudge report` takes, and how large its page and leaderboard are, on a SYNTHETIC 45-model run.

The run root holds made-up predictions for 1,485 RAG-RewardBench items x 45 models (every third a both-order
generative judge, the rest scorers; scripts/synthetic_run.py), written with the RunRoot calls the pipeline uses.
No number in it is a model's result. The report then runs as the CLI does, in a fresh interpreter (imports
included), and once more in-process to split the time between reading + tests and drawing the page.

Usage: python perf/report_45_models.py [--models 45] [--items 1485] [--keep DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout, not an installed copy

from scripts.synthetic_run import build_run


def child(run_path: str) -> None:
    """The timed process: what `ragjudge report ROOT/RUN` runs."""
    start = time.perf_counter()
    from jobs.cli import main

    with open(os.devnull, "w") as quiet:
        stdout, sys.stdout = sys.stdout, quiet
        try:
            code = main(["report", run_path])
        finally:
            sys.stdout = stdout
    print(json.dumps({"seconds": time.perf_counter() - start, "exit": code}))


def breakdown(run_path: str) -> dict[str, float]:
    """Seconds for reading + paired tests (load_report) and for the page (plots and HTML), in this process."""
    from jobs.analysis.report import load_report, paper_table
    from jobs.analysis.report_page import render_page
    from jobs.store.run_root import open_run

    root = open_run(run_path)
    t0 = time.perf_counter()
    report = load_report(root)
    t1 = time.perf_counter()
    tables = {v.name: paper_table(v.module, v.metrics) for v in report.views}
    render_page(report, tables)
    t2 = time.perf_counter()
    return {"read_and_test_s": t1 - t0, "page_s": t2 - t1}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=45)
    parser.add_argument("--items", type=int, default=1485)
    parser.add_argument("--keep", help="build the run root here and keep it")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child)
    folder = args.keep or tempfile.mkdtemp(prefix="ragjudge-perf-")
    t0 = time.perf_counter()
    root = build_run(folder, "synthetic45", models=args.models, items=args.items)
    built = time.perf_counter() - t0
    result = subprocess.run([sys.executable, __file__, "--child", root.path()], capture_output=True,
                            text=True, check=True)
    timed = json.loads(result.stdout.strip().splitlines()[-1])
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    page = Path(root.path("report/index.html")).read_text(encoding="utf-8")
    board = json.loads(Path(root.path("report/leaderboard.json")).read_text())
    svg = sum(len(m) for m in re.findall(r"<svg.*?</svg>", page, flags=re.DOTALL))
    pairs = board["benchmarks"]["rag_rewardbench"]["pairs"]
    out = {
        "synthetic": True, "models": args.models, "items": args.items, "pairs": len(pairs),
        "tests": sorted({p["test"] for p in pairs}),
        "significant_pairs_after_holm": sum(p["p_holm"] < 0.05 for p in pairs),
        "groups": len({g for m in board["benchmarks"]["rag_rewardbench"]["models"] for g in m["group"]}),
        "build_s": round(built, 1), "report_cli_s": round(timed["seconds"], 1),
        "report_peak_rss_mb": round(peak_mb),
        **{k: round(v, 1) for k, v in breakdown(root.path()).items()},
        "index_html_bytes": len(page.encode("utf-8")), "svg_bytes": svg,
        "leaderboard_json_bytes": os.path.getsize(root.path("report/leaderboard.json")),
        "run_root": root.path(),
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
