"""The viewer's pages in headless Chromium (selenium): one in-process server and one browser per module.

The server is the real app (create_app) behind werkzeug's threaded server on a loopback port, with a token, on a
throwaway SQLite file; results are stored finished, as a worker would, after the independent verifiers accepted them.
The browser comes from tests/support/browser.py.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from api import create_app, services, shutdown
from optsched.infra.store import JobState
from optsched.service.kinds import KINDS
from tests.support.browser import headless_chromium

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results"
TOKEN = "pages-test-token"
# OPTSCHED_SAVE_SCREENSHOT=1 refreshes the committed screenshots in bench/results (and plans the shipped night queue
# with the planner rather than a fast baseline), so that a plain test run leaves the work tree as it was.
SAVE = os.environ.get("OPTSCHED_SAVE_SCREENSHOT") == "1"



class Site:
    """The running app: its base URL and a way to store a finished result."""

    def __init__(self, app, base: str) -> None:
        self.app, self.base = app, base

    def finished(self, kind: str, document: dict[str, Any], result, params=None) -> str:
        """Store `result` as a worker would, with the verdict its kind gives it."""
        store = services(self.app).store
        record, _ = store.create(document, kind=kind, params=params)
        store.claim(record.id)
        verdict = KINDS[kind].verdict(result)
        document = result.model_dump(mode="json", by_alias=True)
        assert store.finish(record.id, 1, JobState.finished, verdict=verdict, plan=document)
        return record.id


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[Site]:
    from werkzeug.serving import make_server

    path = tmp_path_factory.mktemp("pages") / "plans.db"
    app = create_app({"DATABASE_URL": f"sqlite:///{path}", "START_WORKERS": False, "API_TOKEN": TOKEN})
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Site(app, f"http://127.0.0.1:{server.server_port}")
    finally:
        server.shutdown()
        thread.join(10)
        shutdown(app)


def chromium(profile: Path, site: Site, *, javascript: bool = True):
    """Chromium logged in to `site` through its login form (a POST form: it works without JavaScript too)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver = headless_chromium(profile, javascript=javascript)
    driver.get(f"{site.base}/")
    token = driver.find_element(By.ID, "token")  # the login page, as a person first sees it
    token.send_keys(TOKEN)
    token.submit()
    WebDriverWait(driver, 10).until(lambda d: d.find_elements(By.ID, "recent") or "Nothing yet" in d.page_source)
    assert driver.current_url == f"{site.base}/"
    driver.get_log("browser")  # the login page's own 401 is logged as a failed load: not a page's error
    return driver


@pytest.fixture(scope="module")
def browser(tmp_path_factory, site):
    driver = chromium(tmp_path_factory.mktemp("chromium"), site)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def browser_without_js(tmp_path_factory, site):
    driver = chromium(tmp_path_factory.mktemp("chromium-nojs"), site, javascript=False)
    yield driver
    driver.quit()


def open_page(driver, url: str, canvas_id: str) -> None:
    """Load `url` and wait until its chart is drawn (Chart.getChart: Chart.js's public registry of charts)."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.set_window_size(1440, 1000)
    driver.get(url)
    WebDriverWait(driver, 20).until(
        lambda d: d.execute_script("const c = document.getElementById(arguments[0]); return !!(c && window.Chart "
                                   "&& Chart.getChart(c) && Chart.getChart(c).chartArea);", canvas_id)
    )


def hover_element(driver, canvas_id: str, dataset: int, index: int) -> None:
    """Move the pointer to the middle of one drawn element (a bar or a point) of the chart on `canvas_id`."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    canvas = driver.find_element(By.ID, canvas_id)
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", canvas)
    x, y, width, height = driver.execute_script(
        "const c = arguments[0], chart = Chart.getChart(c);"
        "const p = chart.getDatasetMeta(arguments[1]).data[arguments[2]].getCenterPoint();"
        "const r = c.getBoundingClientRect(); return [p.x, p.y, r.width, r.height];",
        canvas, dataset, index,
    )
    ActionChains(driver).move_to_element_with_offset(canvas, int(x - width / 2), int(y - height / 2)).perform()


def hover_at(driver, canvas_id: str, fx: float, fy: float) -> None:
    """Move the pointer to a fraction (fx, fy) of the chart's plot area."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    canvas = driver.find_element(By.ID, canvas_id)
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", canvas)
    x, y, width, height = driver.execute_script(
        "const c = arguments[0], a = Chart.getChart(c).chartArea, r = c.getBoundingClientRect();return [a.left + "
        "arguments[1] * (a.right - a.left), a.top + arguments[2] * (a.bottom - a.top), r.width, r.height];",
        canvas,
        fx,
        fy,
    )
    ActionChains(driver).move_to_element_with_offset(canvas, int(x - width / 2), int(y - height / 2)).perform()


def chart_jobs(driver, canvas_id: str) -> list[list[int]]:
    """Per dataset, the job index of each drawn data point (points without one are left out)."""
    return driver.execute_script(
        "return Chart.getChart(document.getElementById(arguments[0])).data.datasets"
        ".map(ds => ds.data.filter(p => p.job !== undefined).map(p => p.job));",
        canvas_id,
    )


def screenshot(driver, tmp_path: Path, name: str, hover=None) -> Path:
    """The whole page as PNG (in tmp_path; copied to bench/results when SAVE), `hover()` called once it fits."""
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1440, min(max(height + 120, 1000), 8000))
    driver.execute_script("window.scrollTo(0, 0)")
    if hover is not None:
        hover()
    shot = tmp_path / name
    assert driver.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if SAVE:
        RESULTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, RESULTS / name)
    return shot
