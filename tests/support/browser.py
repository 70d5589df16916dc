"""Debian's headless Chromium driven by selenium, for the tests of the viewer's pages (tests/pages and the REST
test that follows a plan to its page). `make test` installs the browser (.ci/system-packages); without it these
tests fail saying how to install it, rather than skip: a suite that skips them would pass without the viewer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--force-device-scale-factor=1",
)


def headless_chromium(profile: Path, *, javascript: bool = True) -> Any:
    """A Chromium driver with its own profile folder, 1440 x 1000, the console logged; JavaScript off on request."""
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.fail(f"needs Debian's headless Chromium ({CHROMIUM}, {CHROMEDRIVER}): `make system-packages`")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile / 'profile'}", "--window-size=1440,1000"):
        options.add_argument(flag)
    if not javascript:
        options.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER), log_output=str(profile / "chromedriver.log")),
                              options=options)
    driver.set_page_load_timeout(30)
    return driver


def console_errors(driver) -> list[dict]:
    """Severe console entries since the last call (CSP violations, script errors, failed loads)."""
    return [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
