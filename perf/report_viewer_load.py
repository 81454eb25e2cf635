"""How fast the report's item viewer opens in a real browser, on a SYNTHETIC 1,485-pair x 45-model run.

The pairs are benchmarks/rag_rewardbench/synthetic.py's (Table 4's subsets and mean lengths, text from the
bundled mtRAG corpora, every one labelled synthetic); the run root holds made-up predictions of 45 models on
them (every third a both-order generative judge with its raw texts, the rest scorers; scripts/synthetic_run.py).
No number in it is a model's result. `ragjudge report` writes the page and report/viewer/; then headless
Chromium (Debian's chromium + chromium-driver, driven by Selenium) opens report/index.html over file:// `--loads`
times, and each time the page's own script says when the viewer is ready (its list drawn: body
data-viewer-ready-ms, performance.now() since navigation began). Then `--opens` items, spread over the chunks,
are opened one after another: from the click to the item drawn, its chunk loaded (data-viewer-open-ms).

Usage: python perf/report_viewer_load.py [--models 45] [--loads 5] [--opens 5] [--keep DIR [--reuse]]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout, not an installed copy

from benchmarks.rag_rewardbench.synthetic import generate
from jobs.analysis import write_report
from jobs.store import RunRoot
from scripts.browser import headless, missing, wait_for
from scripts.synthetic_run import build_run


def _sizes(report: Path) -> dict[str, float]:
    chunks = [p.stat().st_size for p in (report / "viewer").glob("b*-c*.js")]
    return {"index_html_mb": (report / "index.html").stat().st_size / 1e6,
            "viewer_index_js_mb": (report / "viewer" / "index.js").stat().st_size / 1e6,
            "chunks": len(chunks), "chunk_mb_largest": max(chunks) / 1e6, "chunks_mb_total": sum(chunks) / 1e6}


def measure(page: Path, loads: int, opens: int) -> dict[str, list[float]]:
    """Per load: ms to the viewer ready (the page's clock), and to the load event; per opened item: ms."""
    from selenium.webdriver.common.by import By

    driver = headless()
    ready, load_event, wall, opened = [], [], [], []
    try:
        for _ in range(loads):
            driver.get("about:blank")
            start = time.perf_counter()
            driver.get(page.as_uri())
            wait_for(driver, "document.body.dataset.viewerReady")
            wall.append(1000 * (time.perf_counter() - start))
            ready.append(float(driver.execute_script("return document.body.dataset.viewerReadyMs")))
            load_event.append(driver.execute_script(
                "return performance.getEntriesByType('navigation')[0].loadEventEnd"))
        count = driver.execute_script("return window.RAGJUDGE_ITEMS.benchmarks[0].items.length")
        for k in range(opens):  # items spread over the run: each in a chunk not loaded before
            i = k * (count - 1) // max(1, opens - 1)
            driver.execute_script(f"location.hash='#items?benchmark=rag_rewardbench&item='+"
                                  f"encodeURIComponent(window.RAGJUDGE_ITEMS.benchmarks[0].items[{i}])")
            item = driver.execute_script(f"return window.RAGJUDGE_ITEMS.benchmarks[0].items[{i}]")
            wait_for(driver, f"document.body.dataset.viewerItem === {json.dumps(item)}")
            opened.append(float(driver.execute_script("return document.body.dataset.viewerOpenMs")))
            assert driver.find_elements(By.CSS_SELECTOR, "#viewer-models tr")
    finally:
        driver.quit()
    return {"ready_ms": ready, "load_event_ms": load_event, "get_to_ready_wall_ms": wall, "open_item_ms": opened}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=45)
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--opens", type=int, default=5)
    parser.add_argument("--keep", help="build the run root here and keep it")
    parser.add_argument("--reuse", action="store_true", help="with --keep: measure the page built there before")
    args = parser.parse_args()
    if reason := missing():
        sys.exit(f"no browser to measure in: {reason}")
    folder = Path(args.keep or tempfile.mkdtemp(prefix="ragjudge-viewer-"))
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "synthetic_pairs.jsonl"
    t0 = t1 = t2 = time.perf_counter()
    root = RunRoot(str(folder), "synthetic45")
    if not (args.reuse and Path(root.path("report/index.html")).is_file()):
        with data.open("w", encoding="utf-8") as f:
            for pair in generate():
                f.write(json.dumps(pair, ensure_ascii=False) + "\n")
        root = build_run(str(folder), "synthetic45", models=args.models, data=str(data))
        t1 = time.perf_counter()
        write_report(root, out=lambda text: None)
        t2 = time.perf_counter()
    load_before = os.getloadavg()[0]
    times = measure(Path(root.path("report/index.html")), args.loads, args.opens)
    items = sum(1 for _ in data.open(encoding="utf-8"))
    models = len(json.loads(Path(root.path("report/leaderboard.json")).read_text())["benchmarks"]
                 ["rag_rewardbench"]["models"])
    out = {"synthetic": True, "models": models, "items": items,
           "build_s": round(t1 - t0, 1), "report_s": round(t2 - t1, 1),  # 0: --reuse
           **{k: round(v, 2) for k, v in _sizes(Path(root.path("report"))).items()},
           **{k: [round(v) for v in vs] for k, vs in times.items()},
           "ready_s_median": round(statistics.median(times["ready_ms"]) / 1000, 2),
           "ready_s_max": round(max(times["ready_ms"]) / 1000, 2),
           "open_item_s_max": round(max(times["open_item_ms"], default=0) / 1000, 2),
           # wall times on a shared machine: the 1-minute load average before and after the browser ran
           "load_average": [round(load_before, 1), round(os.getloadavg()[0], 1)], "cpus": os.cpu_count(),
           "run_root": root.path()}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
