"""Each viewer page in headless Chromium: the interactive chart is drawn from the page's data, hovering a bar (or a
point) shows what it is, the filter leaves only the chosen jobs in the chart and the table, zooming moves the
night's two charts together, and the console stays free of errors (CSP violations included). Screenshots go to
bench/results/viewer-{night,plan,frontier}.png with OPTSCHED_SAVE_SCREENSHOT=1.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

import optsched
from optsched.baselines import edf
from optsched.queueing import analyze
from optsched.replan import replan
from optsched.schema.catalog import sample_workload_path
from optsched.verify.placement import verify
from optsched.verify.timeline import verify_timeline
from tests.api.helpers import night_queue, tiny_workload
from tests.conftest import plan_checked
from tests.pages.conftest import (
    SAVE,
    chart_jobs,
    hover_at,
    hover_element,
    open_page,
    screenshot,
)
from tests.support.browser import console_errors

pytestmark = pytest.mark.slow

START = datetime(2026, 12, 1, 22, 0)
PRIORITY_DATASETS = ("critical", "high", "normal", "low", "restart")


def table_text(driver, table_id: str = "jobs", shown_only: bool = False) -> list[list[str]]:
    """The rendered text of each cell of each row of a table (rows the filter hid left out when `shown_only`)."""
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#' + arguments[0] + ' tbody tr'))"
        ".filter(r => !arguments[1] || r.offsetParent !== null)"
        ".map(r => Array.from(r.cells).map(c => c.innerText.trim()));",
        table_id, shown_only,
    )


def clock(hours: float) -> str:
    """HH:MM of the night as a person reads it (rounded to the minute), computed here independently of the app."""
    return (START + timedelta(hours=hours, seconds=30)).strftime("%H:%M")


@pytest.fixture(scope="module")
def night_page(site):
    """The shipped night queue (61 jobs), planned by EDF (0.5 s; the planner when saving screenshots), verified."""
    queue = json.loads(sample_workload_path("night-queue").read_text())
    policy = optsched.plan_night if SAVE else edf
    night = policy(queue, start=START, hours=8)
    assert verify_timeline(queue, night) == []
    return night, site.finished("night", queue, night)


def test_the_night_page_shows_every_job_where_and_when(site, browser, night_page, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    night, night_id = night_page
    open_page(browser, f"{site.base}/night-plans/{night_id}", "night-timeline")
    assert console_errors(browser) == []

    # One bar per job segment and device, in the dataset of the job's priority (restarts apart).
    expected = sorted(
        (k, len(a.devices)) for k, j in enumerate(night.jobs) for s in j.segments for a in s.allocations
    )
    drawn = chart_jobs(browser, "night-timeline")
    labels = browser.execute_script(
        "return Chart.getChart(document.getElementById('night-timeline')).data.datasets.map(d => d.kind);"
    )
    bars = [job for kind, jobs in zip(labels, drawn, strict=True) if kind in PRIORITY_DATASETS for job in jobs]
    assert sorted(bars) == sorted(k for k, n in expected for _ in range(n))
    rows = browser.execute_script("return Chart.getChart(document.getElementById('night-timeline')).data.labels;")
    assert rows == [f"{u.device} #{i}" for u in night.summary.device_utilisation for i in range(u.count)]

    # The table: every job, its devices and clock times.
    table = table_text(browser)
    assert [cells[0] for cells in table] == [j.job for j in night.jobs]
    for job, cells in zip(night.jobs, table, strict=True):
        if job.segments:
            first = job.segments[0].allocations[0]
            assert f"{first.device} × {first.count} @ {first.cap_w:,.0f} W" in cells[2]
            assert cells[4].startswith(clock(job.start_hours)) and cells[5].startswith(clock(job.finish_hours))
        if job.deadline_hours is not None:
            assert cells[7].startswith(clock(job.deadline_hours))
            assert cells[8] == ("met" if job.deadline_met else "missed")

    # Hovering the longest bar shows its job, devices and clock times.
    k, seg = max(
        ((k, s) for k, j in enumerate(night.jobs) for s in j.segments), key=lambda p: p[1].to_hours - p[1].from_hours
    )
    job = night.jobs[k]
    dataset = labels.index("restart" if seg.restart else job.priority)
    index = drawn[dataset].index(k)
    hover_element(browser, "night-timeline", dataset, index)
    tip = browser.find_element(By.ID, "night-tip")
    assert tip.is_displayed()
    lines = tip.text.splitlines()
    assert lines[0] == job.job
    assert f"priority {job.priority}" in lines
    assert any(clock(seg.from_hours) in line and clock(seg.to_hours) in line for line in lines), lines

    # The job filter leaves that job alone, in the chart and in the table; the priority filter its priority's jobs.
    box = browser.find_element(By.ID, "night-job")
    box.send_keys(job.job)
    assert {j for jobs in chart_jobs(browser, "night-timeline") for j in jobs} == {k}
    assert [cells[0] for cells in table_text(browser, shown_only=True)] == [job.job]
    browser.find_element(By.ID, "night-clear").click()
    Select(browser.find_element(By.ID, "night-priority")).select_by_value("critical")
    critical = {i for i, j in enumerate(night.jobs) if j.priority == "critical" and j.segments}
    assert critical and {j for jobs in chart_jobs(browser, "night-timeline") for j in jobs} == critical
    shown = [cells[0] for cells in table_text(browser, shown_only=True)]
    assert shown == [j.job for j in night.jobs if j.priority == "critical"]
    browser.find_element(By.ID, "night-clear").click()
    assert len(chart_jobs(browser, "night-timeline")[0]) == len(drawn[0])

    # Zooming narrows the time axis of both charts alike; "whole range" brings the night back.
    def x_range(canvas_id: str) -> list[float]:
        return browser.execute_script(
            "const x = Chart.getChart(document.getElementById(arguments[0])).scales.x; return [x.min, x.max];",
            canvas_id,
        )

    whole = x_range("night-timeline")
    browser.find_element(By.ID, "night-zoom-in").click()
    zoomed = x_range("night-timeline")
    assert zoomed[1] - zoomed[0] < 0.8 * (whole[1] - whole[0])
    assert x_range("night-power") == pytest.approx(zoomed)
    browser.find_element(By.ID, "night-zoom-reset").click()
    assert x_range("night-timeline") == pytest.approx(whole)

    # Hovering the power chart (mid-way through its longest stretch between events) names the draw and the budget
    # in force then.
    horizon = max(night.hours, night.summary.makespan_hours, night.events[-1].at_hours)
    ends = [e.at_hours for e in night.events[1:]] + [horizon]
    event, end = max(zip(night.events, ends, strict=True), key=lambda p: p[1] - p[0].at_hours)
    hover_at(browser, "night-power", (event.at_hours + end) / 2 / horizon, 0.5)
    power_tip = browser.find_element(By.ID, "power-tip")
    assert power_tip.is_displayed()
    assert power_tip.text.splitlines()[0] == f"{clock(event.at_hours)} → {clock(end)}" or "(" in power_tip.text
    assert f"fleet draw {event.power_w:,.0f} W" in power_tip.text
    assert f"global budget in force {event.budget_w:,.0f} W" in power_tip.text

    peak = browser.find_element(By.ID, "peak").text
    assert f"{night.summary.peak_power_w:,.0f} W at " in peak and "budget" in peak
    assert console_errors(browser) == []
    screenshot(browser, tmp_path, "viewer-night.png", lambda: hover_element(browser, "night-timeline", dataset, index))


def test_restarts_and_failed_devices_are_drawn_and_explained(site, browser):
    from selenium.webdriver.common.by import By

    queue = night_queue("failures")
    queue["failures"] = [{"device": "g", "count": 1, "at_hours": 1.0, "repair_hours": 1.5}]
    night = optsched.plan_night(queue, start=START, hours=8)
    assert verify_timeline(queue, night) == []
    night_id = site.finished("night", queue, night)
    open_page(browser, f"{site.base}/night-plans/{night_id}", "night-timeline")
    down = browser.execute_script(
        "return Chart.getChart(document.getElementById('night-timeline')).data.datasets"
        ".filter(d => d.kind === 'down')[0].data.map(p => [p.row, p.x[0], p.x[1]]);"
    )
    assert down == [[0, pytest.approx(1.0), pytest.approx(2.5)]]
    labels = browser.execute_script(
        "return Chart.getChart(document.getElementById('night-timeline')).data.datasets.map(d => d.kind);"
    )
    hover_element(browser, "night-timeline", labels.index("down"), 0)
    tip = browser.find_element(By.ID, "night-tip")
    assert tip.text.splitlines()[0] == "g #0 is down"
    assert f"{clock(1.0)} → {clock(2.5)}" in tip.text
    assert console_errors(browser) == []


def test_the_plan_page_placement_chart(site, browser, tmp_path):
    from selenium.webdriver.common.by import By

    data = json.loads(sample_workload_path("demo").read_text())
    if not SAVE:  # the best plan found in a second is as good a page (and verified all the same)
        data["options"] = {**data.get("options", {}), "time_limit_s": 1}
    plan = plan_checked(data)
    assert plan.feasible
    plan_id = site.finished("plan", data, plan)
    open_page(browser, f"{site.base}/plans/{plan_id}", "plan-placement")
    assert console_errors(browser) == []
    drawn = chart_jobs(browser, "plan-placement")
    assert sorted(j for jobs in drawn for j in jobs) == sorted(
        k for k, p in enumerate(plan.placements) for _ in p.allocations
    )
    # Hover the bar with the most devices: its job, and how many of which group it holds.
    bars = browser.execute_script(
        "return Chart.getChart(document.getElementById('plan-placement')).data.datasets"
        ".map(ds => ds.data.map(p => p.idle ? null : [p.job, p.count, p.group]));"
    )
    dataset, index = max(
        ((d, i) for d, points in enumerate(bars) for i, p in enumerate(points) if p),
        key=lambda di: bars[di[0]][di[1]][1],
    )
    k, count, group = bars[dataset][index]
    placement = plan.placements[k]
    assert count in [a.count for a in placement.allocations if a.device == plan.devices[group].device]
    hover_element(browser, "plan-placement", dataset, index)
    tip = browser.find_element(By.ID, "plan-tip")
    lines = tip.text.splitlines()
    assert tip.is_displayed() and lines[0] == placement.job, lines
    group_size = plan.devices[group].used + plan.devices[group].idle
    assert f"here {count} of {group_size} {plan.devices[group].device} @ " in tip.text, lines

    browser.find_element(By.ID, "plan-job").send_keys(placement.job)
    assert {j for jobs in chart_jobs(browser, "plan-placement") for j in jobs} == {k}
    assert [cells[0] for cells in table_text(browser, shown_only=True)] == [placement.job]
    browser.find_element(By.ID, "plan-clear").click()
    assert console_errors(browser) == []
    screenshot(browser, tmp_path, "viewer-plan.png", lambda: hover_element(browser, "plan-placement", dataset, index))


def test_the_frontier_page_curve(site, browser, tmp_path):
    from selenium.webdriver.common.by import By

    if SAVE:
        data = json.loads(sample_workload_path("demo").read_text())
        frontier = optsched.frontier(data, time_limit_s=5)
    else:
        data = tiny_workload("frontier")
        frontier = optsched.frontier(data, budgets=[250, 300, 400, 500, 600])
    assert frontier.points
    frontier_id = site.finished("frontier", data, frontier)
    open_page(browser, f"{site.base}/frontiers/{frontier_id}", "frontier-curve")
    assert console_errors(browser) == []
    points = browser.execute_script(
        "return Chart.getChart(document.getElementById('frontier-curve')).data.datasets[0].data.map(p => [p.x, p.y]);"
    )
    assert points == [[pytest.approx(p.budget_w / 1000), pytest.approx(p.weighted_speedup)] for p in frontier.points]
    middle = len(frontier.points) // 2
    hover_element(browser, "frontier-curve", 0, middle)
    tip = browser.find_element(By.ID, "frontier-tip")
    assert tip.is_displayed()
    assert tip.text.splitlines()[0] == f"budget {frontier.points[middle].budget_w / 1000:.2f} kW"
    hot = browser.find_elements(By.CSS_SELECTOR, "#points tbody tr.hot")
    assert [r.get_attribute("data-index") for r in hot] == [str(middle)]
    assert console_errors(browser) == []
    screenshot(browser, tmp_path, "viewer-frontier.png", lambda: hover_element(browser, "frontier-curve", 0, middle))


def test_without_javascript_the_pages_show_the_png_charts_and_the_tables(site, browser_without_js, night_page):
    from selenium.webdriver.common.by import By

    night, night_id = night_page
    browser_without_js.get(f"{site.base}/night-plans/{night_id}")
    for image in ("gantt-chart", "power-chart"):
        shown = browser_without_js.find_element(By.ID, image)
        assert shown.is_displayed() and shown.size["width"] > 1000 and shown.size["height"] > 300, shown.size
    assert not browser_without_js.find_element(By.ID, "night-live").is_displayed()
    assert [cells[0] for cells in table_text(browser_without_js, shown_only=True)] == [j.job for j in night.jobs]


def test_the_queueing_and_replan_pages_show_their_chart_and_tables_without_console_errors(site, browser):
    """These two pages have no interactive chart (the queueing study's front is a PNG; a re-plan has no chart): the
    image loads, the tables list what the results say, and the console stays clean."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    study = json.loads((Path(__file__).resolve().parents[2] / "models" / "studies" / "season.json").read_text())
    result = analyze(study)
    assert result.ok and result.front
    study_id = site.finished("queueing", study, result, params={"method": "analytic"})
    browser.get(f"{site.base}/queueing-studies/{study_id}")
    image = browser.find_element(By.ID, "queueing-chart")
    WebDriverWait(browser, 20).until(lambda d: d.execute_script("return arguments[0].complete;", image))
    assert browser.execute_script("return arguments[0].naturalWidth;", image) > 300
    assert [cells[0] for cells in table_text(browser, "classes")] == [c.name for c in result.classes]
    assert console_errors(browser) == []

    data = tiny_workload("replan")
    parent = optsched.plan(data)
    assert verify(data, parent) == []
    parent_id = site.finished("plan", data, parent)
    used = next(a.device for p in parent.placements for a in p.allocations)
    change = {"device_failures": [{"device": used, "count": 1}]}
    moved = replan(data, parent.model_dump(mode="json"), change)
    assert verify(moved.workload.model_dump(mode="json", by_alias=True), moved.plan) == []
    document = {"workload": data, "plan": parent.model_dump(mode="json"), "change": change}
    replan_id = site.finished("replan", document, moved, params={"parent": parent_id})
    browser.get(f"{site.base}/replans/{replan_id}")
    assert browser.find_element(By.CSS_SELECTOR, "h1 a").get_attribute("href") == f"{site.base}/plans/{parent_id}"
    assert browser.find_element(By.ID, "moved").text == str(moved.moved)
    assert [cells[0] for cells in table_text(browser, "changes")] == [
        c.job + (" (pinned)" if c.pinned else "") for c in moved.changes
    ]
    assert console_errors(browser) == []
