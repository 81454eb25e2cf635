"""A screenshot of the report's item viewer on a run that `ragjudge report` has written: the benchmark picked,
filtered to the items its models disagree on, the first of them opened. Headless Chromium driven by Selenium
(Debian: apt-get install chromium chromium-driver; selenium is in the dev extras).

Usage: python docs/viewer_screenshot.py ROOT/RUN OUT.png [--benchmark rag_rewardbench] [--height 2000]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout, not an installed copy

from scripts.browser import headless, missing, wait_for


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", help="the run folder, whose report/index.html `ragjudge report` wrote")
    parser.add_argument("out", help="the PNG to write")
    parser.add_argument("--benchmark", default="rag_rewardbench")
    parser.add_argument("--height", type=int, default=2000, help="pixels of the page shown")
    args = parser.parse_args()
    if reason := missing():
        sys.exit(f"no browser: {reason}")
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    driver = headless(1400, args.height)
    try:
        driver.get((Path(args.run).resolve() / "report" / "index.html").as_uri())
        wait_for(driver, "document.body.dataset.viewerReady")
        Select(driver.find_element(By.ID, "viewer-benchmark")).select_by_visible_text(args.benchmark)
        driver.find_element(By.ID, "viewer-disagree").click()
        rows = driver.find_elements(By.CSS_SELECTOR, "#viewer-list tr[data-i]")
        if rows:
            rows[0].click()
            wait_for(driver, "document.body.dataset.viewerItem")
        driver.execute_script("document.getElementById('items').scrollIntoView()")
        driver.save_screenshot(args.out)
    finally:
        driver.quit()
    print(args.out)


if __name__ == "__main__":
    main()
