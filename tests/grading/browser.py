"""A page opened as staff open it: Debian's headless Chromium, driven by Selenium through
Debian's chromium-driver (the same version as the browser, so no driver is downloaded).
`.ci/run` installs both."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.chrome.webdriver import WebDriver

CHROMIUM = Path("/usr/bin/chromium")
DRIVER = Path("/usr/bin/chromedriver")


@contextmanager
def chromium(width: int = 1280, height: int = 1800) -> Iterator[WebDriver]:
    """A headless Chromium whose console (`driver.get_log("browser")`) is kept."""
    if not (CHROMIUM.is_file() and DRIVER.is_file()):
        pytest.fail(
            "needs Debian's chromium and chromium-driver (apt-get install chromium "
            "chromium-driver; .ci/run installs them)"
        )
    options = Options()
    options.binary_location = str(CHROMIUM)
    options.add_argument("--headless=new")
    options.add_argument(f"--window-size={width},{height}")
    if os.geteuid() == 0:
        # Chromium's own sandbox refuses to run as root (CI is root); the page is a local file
        # of this test's, opened offline.
        options.add_argument("--no-sandbox")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(str(DRIVER)))
    try:
        yield driver
    finally:
        driver.quit()


def console_errors(driver: WebDriver) -> list[str]:
    """What the page logged as errors: uncaught exceptions, refused resources, policy
    violations."""
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
