"""The viewer in a real headless browser, the whole way: `optsched serve` as a subprocess with a token, the demo
planned through /v1, the login form, the plan page with its chart; Debian's Chromium driven by selenium.

Saves a screenshot of the plan page (to bench/results/viewer.png with OPTSCHED_SAVE_SCREENSHOT=1); the pages one by
one are tested in tests/pages. The browser comes from tests/support/browser.py.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import requests

from optsched.verify.placement import verify
from tests.api.test_api_server import DEMO, free_port, poll, server
from tests.support.browser import console_errors, headless_chromium

SCREENSHOT = Path(__file__).resolve().parents[2] / "bench" / "results" / "viewer.png"
TOKEN = "browser-test-token"

pytestmark = pytest.mark.slow  # a headless Chromium per test


@pytest.fixture
def browser(tmp_path):
    driver = headless_chromium(tmp_path)
    yield driver
    driver.quit()


def test_the_plan_pages_render_in_chromium_without_console_errors(tmp_path, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    data = json.loads(DEMO.read_text())
    data["options"] = {**data.get("options", {}), "time_limit_s": 10}
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with server(tmp_path / "plans.db", tmp_path / "server.log", free_port(), token=TOKEN) as base:
        response = requests.post(f"{base}/v1/plans", json=data, headers={**auth, "Prefer": "respond-async"}, timeout=10)
        assert response.status_code == 202, response.text
        final = poll(base, response.headers["Location"], timeout_s=60, headers=auth)
        assert final["status"] in ("optimal", "time_limit"), final
        assert verify(data, final["plan"]) == []
        plan_id = final["id"]

        browser.get(f"{base}/")  # once per session: the login form, then a cookie from now on
        token = browser.find_element(By.ID, "token")
        token.send_keys(TOKEN)
        token.submit()
        WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.ID, "recent"))
        assert browser.current_url == f"{base}/"
        browser.get_log("browser")  # the login page's 401 is logged as a failed load
        link = browser.find_element(By.CSS_SELECTOR, f'#recent a[href="/plans/{plan_id}"]')
        link.click()
        assert browser.current_url == f"{base}/plans/{plan_id}"

        # The placement chart is drawn by the page's script (Chart.js served by the app), one bar per allocation.
        WebDriverWait(browser, 20).until(
            lambda d: d.execute_script(
                "return !!(window.Chart && Chart.getChart(document.getElementById('plan-placement')));"
            )
        )
        bars = browser.execute_script(
            "return Chart.getChart(document.getElementById('plan-placement')).data.datasets"
            ".reduce((n, ds) => n + ds.data.filter(p => !p.idle).length, 0);"
        )
        assert bars == sum(len(p["allocations"]) for p in final["plan"]["placements"])
        jobs = browser.find_elements(By.CSS_SELECTOR, "#jobs tbody tr")
        assert [row.find_element(By.TAG_NAME, "td").text for row in jobs] == [
            p["job"] for p in final["plan"]["placements"]
        ]
        assert browser.find_element(By.ID, "status").text == final["status"]
        assert len(browser.find_elements(By.CSS_SELECTOR, "#power tbody tr")) == 1 + len(
            final["plan"]["budget_by_domain"]
        )
        assert console_errors(browser) == []

        page_height = browser.execute_script("return document.documentElement.scrollHeight")
        browser.set_window_size(1440, min(max(page_height + 120, 1000), 4000))
        shot = tmp_path / "viewer.png"
        assert browser.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if os.environ.get("OPTSCHED_SAVE_SCREENSHOT") == "1":
        # Refresh the committed screenshot only on request, so a test run leaves the work tree clean.
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, SCREENSHOT)


def test_swagger_ui_renders_every_operation_under_its_content_security_policy(tmp_path, browser):
    """/docs/swagger under its CSP (api/headers.py DOCS_POLICY: no inline script): Swagger UI starts, loads the
    spec and lists every operation, with nothing refused (a CSP violation is a SEVERE console entry)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    with server(tmp_path / "plans.db", tmp_path / "server.log", free_port(), token=TOKEN) as base:
        spec = requests.get(f"{base}/openapi.json", timeout=10).json()
        operations = sum(len(item) for item in spec["paths"].values())
        response = requests.get(f"{base}/docs/swagger", timeout=10)
        assert "script-src 'self';" in response.headers["Content-Security-Policy"]
        assert response.headers["X-Frame-Options"] == "DENY"
        browser.get(f"{base}/docs/swagger")
        WebDriverWait(browser, 30).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".opblock")) == operations)
        assert browser.find_element(By.CSS_SELECTOR, ".info .title").text.startswith("optsched")
        browser.get(f"{base}/docs/")
        WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, 'a[href="swagger"]'))
        assert console_errors(browser) == []
