"""Headless Chromium driven by Selenium, for the report viewer's browser test, perf/report_viewer_load.py and
docs/viewer_screenshot.py: Debian's `chromium` and `chromium-driver` (apt), Selenium from PyPI. Both binaries
are named to Selenium, so its Selenium Manager never looks for (or downloads) a browser."""
from __future__ import annotations

import importlib.util
import shutil
from typing import Any

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
DRIVERS = ("chromedriver", "chromium-driver")


def _first(names: tuple[str, ...]) -> str | None:
    return next((path for path in map(shutil.which, names) if path), None)


def missing() -> str | None:
    """Why no browser test can run here, or None when one can."""
    if importlib.util.find_spec("selenium") is None:
        return "selenium is not installed (the dev extras: pip install -e '.[dev]')"
    if _first(BROWSERS) is None:
        return "no chromium on PATH (Debian: apt-get install chromium chromium-driver)"
    if _first(DRIVERS) is None:
        return "no chromedriver on PATH (Debian: apt-get install chromium-driver)"
    return None


def headless(width: int = 1400, height: int = 1000) -> Any:
    """A new headless Chromium (selenium.webdriver.Chrome); the caller quits it."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = _first(BROWSERS)
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 f"--window-size={width},{height}"):
        options.add_argument(flag)
    return webdriver.Chrome(options=options, service=Service(executable_path=_first(DRIVERS)))


def wait_for(driver: Any, script: str, timeout: float = 30.0) -> Any:
    """The first truthy value of a JavaScript expression, polled until `timeout`."""
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.02).until(
        lambda d: d.execute_script(f"return {script}"))
