"""The HTML viewer through the Flask test client: pages, their tables in clock times, the chart data and the
scripts that draw it, escaping, the assets. (In a browser: tests/pages; the login flow: tests/hardening.)"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

import pytest
from markupsafe import escape

import optsched
from api import pages, services
from optsched.infra.store import JobState
from optsched.service.kinds import KINDS
from optsched.verify.timeline import verify_timeline
from tests.api.helpers import drawn, night_queue, tiny_workload
from tests.conftest import plan_checked
from tests.support.factories import device, job, workload
from tests.test_elastic import fleet

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def finished(app, kind: str, document: dict, result, params=None) -> str:
    """Store a resource and finish it with `result` (from the Python API), as a worker would."""
    store = services(app).store
    record, _ = store.create(document, kind=kind, params=params)
    store.claim(record.id)
    verdict = KINDS[kind].verdict(result)
    document = result.model_dump(mode="json", by_alias=True)
    assert store.finish(record.id, 1, JobState.finished, verdict=verdict, plan=document)
    return record.id


def page(client, url: str, status: int = 200, **kwargs) -> str:
    response = client.get(url, **kwargs)
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "text/html"
    policy = dict(d.strip().split(" ", 1) for d in response.headers["Content-Security-Policy"].split(";"))
    assert policy["default-src"] == "'none'" and policy["script-src"] == "'self'"  # our script files, nothing else
    assert policy["style-src"] == "'self'"
    html = response.get_data(as_text=True)
    for tag in re.findall(r"<script[^>]*>", html):  # no inline code: files of this server, or data
        assert re.fullmatch(r'<script defer src="/assets/[0-9a-f]{16}/[\w/.-]+\.js">', tag) or tag == (
            '<script type="application/json" id="chart-data">'
        ), tag
    return html


def chart_data(html: str) -> dict:
    found = re.search(r'<script type="application/json" id="chart-data">(.*?)</script>', html, re.DOTALL)
    assert found, "no chart data"
    return json.loads(found.group(1))


def clock(start: datetime, hours: float) -> str:
    """HH:MM of `hours` after `start`, to the nearest minute (independent of api/pages.py)."""
    return (start + timedelta(hours=hours, seconds=30)).strftime("%H:%M")


def rows(html: str, table_id: str) -> list[str]:
    body = re.search(rf'<table id="{table_id}">.*?<tbody>(.*?)</tbody>', html, re.DOTALL)
    assert body, f"no table #{table_id}"
    return re.findall(r"<tr[ >].*?</tr>", body.group(1), re.DOTALL)


@pytest.mark.slow
def test_a_plan_page_has_the_chart_the_power_by_domain_and_every_job(app, client):
    data = fleet(domains={"rack1": 1800})
    plan = plan_checked(data)
    plan_id = finished(app, "plan", data, plan)
    html = page(client, f"/plans/{plan_id}")
    assert re.search(
        rf'<noscript>\s*<img id="placement-chart" class="chart" src="/plans/{plan_id}/placement.png"', html
    )
    jobs = rows(html, "jobs")
    assert len(jobs) == len(plan.placements)
    for placement, row in zip(plan.placements, jobs, strict=True):
        assert f"<td>{placement.job}</td>" in row
        for a in placement.allocations:
            assert f"{a.device} × {a.count} @ {a.cap_w:,.0f} W" in row
        if placement.meets_deadline:
            assert '<span class="met">met</span>' in row
    data = chart_data(html)
    assert [g["id"] for g in data["groups"]] == [d.device for d in plan.devices]
    assert sorted((data["jobs"][b["job"]]["id"], data["groups"][b["group"]]["id"], b["count"], b["cap"])
                  for b in data["bars"]) == sorted((p.job, a.device, a.count, a.cap_w)
                                                   for p in plan.placements for a in p.allocations)
    for g, group in enumerate(data["groups"]):  # the bars of a group tile its used devices
        spans = sorted((b["first"], b["first"] + b["count"]) for b in data["bars"] if b["group"] == g)
        assert [a for a, _ in spans] == [0] + [b for _, b in spans[:-1]]
        assert (spans[-1][1] if spans else 0) == group["used"] <= group["count"]
    power = rows(html, "power")
    assert "domain rack1" in power[1] and "1,800 W" in power[1] and "<meter" in power[1]
    assert f"{plan.power_w:,.0f} W" in power[0]
    assert "<meta http-equiv=\"refresh\"" not in html
    chart = drawn(client, f"/plans/{plan_id}/placement.png")
    assert chart.status_code == 200 and chart.data.startswith(PNG_SIGNATURE)


def test_an_infeasible_plan_page_shows_the_diagnosis_and_every_suggestion(app, client):
    data = fleet(domains={"rack1": 900})
    plan = plan_checked(data)
    assert plan.status == optsched.Status.infeasible and plan.suggestions
    html = page(client, f"/plans/{finished(app, 'plan', data, plan)}")
    assert 'id="diagnosis"' in html
    for line in plan.diagnosis:
        assert str(escape(line)) in html
    suggestions = rows(html, "suggestions")
    assert len(suggestions) == len(plan.suggestions)
    for s, row in zip(plan.suggestions, suggestions, strict=True):
        assert f"<code>{s.target}</code>" in row and str(escape(s.message)) in row


@pytest.mark.slow
def test_user_text_is_escaped_in_pages_and_drawn_literally_in_charts(app, client):
    data = workload(
        [device("<g>", "m", 2, [(100, 1.0), (50, 0.5)])],
        [job("<script>alert(1)</script>", work=2, p=0.5), job("$\\frac{$", work=1, p=0.5)],
        power={"budget_w": 150},
    )
    data["name"] = "<img src=x onerror=alert(1)></script>"
    plan_id = finished(app, "plan", data, plan_checked(data))
    html = page(client, f"/plans/{plan_id}")
    assert "<script>" not in html and "<img src=x" not in html and "<g>" not in html
    assert html.count("</script>") == html.count("<script")  # the ids in the chart data cannot end its block
    assert {j["id"] for j in chart_data(html)["jobs"]} == {"<script>alert(1)</script>", "$\\frac{$"}
    assert (
        "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;img src=x onerror=alert(1)&gt;&lt;/script&gt;" in html
    )
    assert drawn(client, f"/plans/{plan_id}/placement.png").status_code == 200  # `$\frac{$` is no math text
    listing = page(client, "/")
    assert "<img src=x" not in listing and "&lt;img src=x onerror=alert(1)&gt;" in listing
    missing = page(client, "/plans/%3Cscript%3Ealert(1)", 404)
    assert "<script>" not in missing and "&lt;script&gt;" in missing


def test_the_index_lists_every_kind_newest_first_with_links_and_figures(app, client):
    plan_data = tiny_workload("first")
    plan = plan_checked(plan_data)
    plan_id = finished(app, "plan", plan_data, plan)
    queue = night_queue("tonight")
    night = optsched.plan_night(queue, start=datetime(2026, 12, 1, 22), hours=8)
    assert verify_timeline(queue, night) == []
    night_id = finished(app, "night", queue, night)
    queued_id = client.post("/v1/frontiers", json={"workload": tiny_workload("later")}).get_json()["id"]
    html = page(client, "/")
    listed = rows(html, "recent")
    assert [re.search(r'href="/[a-z-]+/([0-9a-f]{32})"', r).group(1) for r in listed] == [queued_id, night_id, plan_id]
    assert f'href="/frontiers/{queued_id}"' in listed[0] and "queued" in listed[0]
    assert f'href="/night-plans/{night_id}"' in listed[1] and "tonight" in listed[1]
    assert f"makespan {night.summary.makespan_hours:,.2f} h" in listed[1]
    assert f'href="/plans/{plan_id}"' in listed[2] and f"{plan.objective:.6g}" in listed[2]
    only_plans = page(client, "/", query_string={"kind": "plan"})
    assert len(rows(only_plans, "recent")) == 1
    assert page(client, "/", 400, query_string={"cursor": "nonsense"})


@pytest.mark.slow
def test_the_night_page_lists_every_job_with_its_devices_and_clock_times(app, client):
    queue = night_queue()
    queue["failures"] = [{"device": "g", "count": 1, "at_hours": 1.0, "repair_hours": 1.5}]
    start = datetime(2026, 12, 1, 22, 0)
    night = optsched.plan_night(queue, start=start, hours=8, preempt=True)
    assert verify_timeline(queue, night) == []
    night_id = finished(app, "night", queue, night)
    html = page(client, f"/night-plans/{night_id}")
    assert re.search(rf'<noscript>\s*<img id="gantt-chart" class="chart" src="/night-plans/{night_id}/gantt.png"', html)
    assert f'src="/night-plans/{night_id}/power.png"' in html
    assert drawn(client, f"/night-plans/{night_id}/gantt.png").data.startswith(PNG_SIGNATURE)

    table = rows(html, "jobs")
    assert len(table) == len(night.jobs)
    for timeline, row in zip(night.jobs, table, strict=True):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.DOTALL)
        assert cells[0] == timeline.job and cells[1] == timeline.priority
        for s in timeline.segments:
            for a in s.allocations:
                assert f"{a.device} × {a.count} @ {a.cap_w:,.0f} W" in cells[2]
        hours_by_column = (
            (3, timeline.release_hours),
            (4, timeline.start_hours),
            (5, timeline.finish_hours),
            (7, timeline.deadline_hours),
        )
        for column, hours in hours_by_column:
            if hours is None:
                assert cells[column] == "—"
                continue
            at = start + timedelta(hours=hours)
            assert f'<time datetime="{at.isoformat(timespec="seconds")}"' in cells[column]
            assert f">{clock(start, hours)}</time>" in cells[column]
            day = (at + timedelta(seconds=30)).date()  # the date is shown when it is not the night's first
            assert ('class="day"' in cells[column]) == (day != start.date())

    # The peak power line says when and against which budget; chart data: every bar, devices down, the power.
    peak = max(night.events, key=lambda e: e.power_w)
    line = re.search(r'<dd id="peak">(.*?)</dd>', html, re.DOTALL).group(1)
    assert f"{peak.power_w:,.0f} W at " in line and f">{clock(start, peak.at_hours)}</time>" in line
    assert f"of the {peak.budget_w:,.0f} W global budget then in force" in line
    data = chart_data(html)
    assert [j["id"] for j in data["jobs"]] == [j.job for j in night.jobs]
    assert len(data["bars"]) == sum(a.count for j in night.jobs for s in j.segments for a in s.allocations)
    assert data["rows"][:3] == ["g #0", "g #1", "h #0"]
    assert data["down"] == [{"row": 0, "from": 1.0, "to": 2.5}]
    assert data["power"]["t"] == [e.at_hours for e in night.events]
    assert data["power"]["budget"] == [e.budget_w for e in night.events]
    assert data["windows"] == [{"from": 2.0, "to": 3.0, "budget": 200.0}]


@pytest.mark.slow
def test_the_frontier_page_carries_its_curve(app, client):
    data = tiny_workload()
    frontier = optsched.frontier(data, budgets=[300, 600])
    frontier_id = finished(app, "frontier", data, frontier)
    html = page(client, f"/frontiers/{frontier_id}")
    assert f'src="/frontiers/{frontier_id}/plot.png"' in html
    assert len(rows(html, "points")) == 2
    assert drawn(client, f"/frontiers/{frontier_id}/plot.png").data.startswith(PNG_SIGNATURE)
    curve = chart_data(html)
    assert [(p["budget"], p["speedup"]) for p in curve["points"]] == [
        (p.budget_w, p.weighted_speedup) for p in frontier.points
    ]
    assert {m["label"] for m in curve["marks"]} >= {"least feasible", "current budget"}


def test_clock_times_round_to_the_minute_and_name_the_day_when_it_changes():
    start = datetime(2026, 12, 1, 22, 0, tzinfo=timezone(timedelta(hours=1)))
    assert pages.clock(start, 0.0) == pages.Clock("22:00", "", "2026-12-01T22:00:00+01:00", "+0.00 h")
    assert pages.clock(start, 1 + 59.5 / 60).text == "00:00"  # 23:59:30 rounds up, into the next day
    assert pages.clock(start, 1 + 59.5 / 60).day == "Wed 2 Dec"
    assert pages.clock(start, 1 + 59.4 / 60).text == "23:59" and pages.clock(start, 1 + 59.4 / 60).day == ""
    assert pages.clock(start, 26.25).text == "00:15" and pages.clock(start, 26.25).day == "Thu 3 Dec"
    assert pages.clock(start, None) is None
    assert [pages.duration(h) for h in (0.0, 0.75, 1.0 + 5 / 60, 30.5, None)] == ["0 min", "45 min", "1 h 05 min",
                                                                               "30 h 30 min", "—"]


def test_the_peak_and_the_instant_closest_to_the_budget_are_told_apart():
    queue = night_queue()
    night = optsched.plan_night(queue, start="2026-12-01T22:00", hours=8)
    assert verify_timeline(queue, night) == []
    base = night.events[0]
    events = tuple(
        base.model_copy(update={"at_hours": at, "power_w": power, "budget_w": budget})
        for at, power, budget in ((0.0, 180.0, 300.0), (2.0, 200.0, 200.0), (3.0, 250.0, 300.0), (4.0, 250.0, None))
    )
    view = pages.night_view(night.model_copy(update={"events": events}))
    assert (view.peak.at.text, view.peak.power_w, view.peak.budget_w) == ("01:00", 250.0, 300.0)  # the first of two
    assert view.peak.budget_of == "the night's budget" and view.peak.share == pytest.approx(250 / 300)
    assert (view.tightest.at.text, view.tightest.share, view.tightest.budget_of) == (
        "00:00",
        1.0,
        "the 00:00–01:00 window",
    )
    same = pages.night_view(night.model_copy(update={"events": events[1:2]}))
    assert same.peak.at.text == "00:00" and same.tightest is None  # one instant: one line


def test_an_unfinished_plan_page_reloads_itself_and_its_chart_is_409(client):
    plan_id = client.post("/v1/plans", json=tiny_workload()).get_json()["id"]
    html = page(client, f"/plans/{plan_id}")
    assert '<meta http-equiv="refresh" content="2">' in html and 'id="status">queued<' in html
    assert client.get(f"/plans/{plan_id}/placement.png").status_code == 409


def test_scripts_are_served_by_the_app_cached_by_digest_and_public(make_app):
    client = make_app(API_TOKEN="s3cret-token-0123456789").test_client()
    assert client.get("/").status_code == 401  # the pages need the token (tests/hardening: how to give it)
    html = client.get("/", headers={"Authorization": "Bearer s3cret-token-0123456789"}).get_data(as_text=True)
    css = re.search(r'href="(/assets/([0-9a-f]{16})/viewer.css)"', html)
    assert css, html
    for url, mimetype in ((css.group(1), "text/css"),):
        response = client.get(url)  # no token: scripts and styles hold nothing secret
        assert response.status_code == 200 and response.mimetype == mimetype
        assert response.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    from api.viewer import ASSETS, _digest

    for name in ("viewer.js", "vendor/chart.umd.min.js", "vendor/hammer.min.js", "vendor/chartjs-plugin-zoom.min.js"):
        digest = _digest(name)
        response = client.get(f"/assets/{digest}/{name}")
        assert response.status_code == 200 and response.mimetype == "text/javascript"
        assert response.data == (ASSETS / name).read_bytes()
        assert "immutable" in response.headers["Cache-Control"]
        stale = client.get(f"/assets/0000000000000000/{name}")  # an old page's digest: served, not cached for long
        assert stale.status_code == 200 and "immutable" not in stale.headers["Cache-Control"]
    assert client.get("/assets/0000000000000000/../viewer.py").status_code == 404
    assert client.get("/assets/0000000000000000/nothing.js").status_code == 404
