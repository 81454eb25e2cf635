"""docs/report.png: a screenshot of `ragjudge report` on a SYNTHETIC run (made-up models and predictions from
scripts/synthetic_run.py; no number on it is a result), taken with headless Chromium (Debian: apt-get install
chromium). Usage: python docs/report_screenshot.py [--out docs/report.png]
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout, not an installed copy

from scripts.synthetic_run import build_run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "report.png"))
    parser.add_argument("--height", type=int, default=2600, help="pixels of the page shown")
    args = parser.parse_args()
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        sys.exit("no chromium on PATH (Debian: apt-get install chromium)")
    from jobs.analysis.report import write_report

    root = build_run(tempfile.mkdtemp(prefix="ragjudge-shot-"), "SYNTHETIC-not-real-results", models=12,
                     items=1485, bianbench_judges=3)
    write_report(root, out=lambda line: None)
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--window-size=1200,{args.height}", f"--screenshot={args.out}",
                    f"file://{root.path('report/index.html')}"], check=True, capture_output=True)
    print(args.out)


if __name__ == "__main__":
    main()
