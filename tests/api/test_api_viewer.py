"""The HTML viewer through the Flask test client: pages, charts, escaping, the token for browsers."""

from __future__ import annotations

import re
from datetime import datetime

import pytest
from markupsafe import escape

import optsched
from api import services
from optsched.verify.timeline import verify_timeline
from optsched.infra.store import PlanState, ResourceKind, state_of
from tests.api.helpers import night_queue, tiny_workload
from tests.conftest import plan_checked
from optsched.testing.factories import device, job, workload
from tests.test_elastic import fleet

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def finished(app, kind: ResourceKind, document: dict, result, params=None) -> str:
    """Store a resource and finish it with `result` (from the Python API), as a worker would."""
    store = services(app).store
    record, _ = store.create(document, kind=kind, params=params)
    store.claim(record.id)
    state = PlanState.done if kind == ResourceKind.frontier and result.points else state_of(result.status)
    assert store.finish(record.id, 1, state, plan=result.model_dump(mode="json", by_alias=True))
    return record.id


def page(client, url: str, status: int = 200, **kwargs) -> str:
    response = client.get(url, **kwargs)
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "text/html"
    assert "script-src" not in response.headers["Content-Security-Policy"]  # no script may run at all
    assert response.headers["Content-Security-Policy"].startswith("default-src 'none'")
    return response.get_data(as_text=True)


def rows(html: str, table_id: str) -> list[str]:
    body = re.search(rf'<table id="{table_id}">.*?<tbody>(.*?)</tbody>', html, re.DOTALL)
    assert body, f"no table #{table_id}"
    return re.findall(r"<tr[ >].*?</tr>", body.group(1), re.DOTALL)


def test_a_plan_page_has_the_chart_the_power_by_domain_and_every_job(app, client):
    data = fleet(domains={"rack1": 1800})
    plan = plan_checked(data)
    plan_id = finished(app, ResourceKind.plan, data, plan)
    html = page(client, f"/plans/{plan_id}")
    assert f'src="/plans/{plan_id}/placement.png"' in html
    jobs = rows(html, "jobs")
    assert len(jobs) == len(plan.placements)
    for placement, row in zip(plan.placements, jobs, strict=True):
        assert f"<td>{placement.job}</td>" in row
        if placement.meets_deadline:
            assert '<span class="met">met</span>' in row
    power = rows(html, "power")
    assert "domain rack1" in power[1] and "1,800 W" in power[1] and "<meter" in power[1]
    assert f"{plan.power_w:,.0f} W" in power[0]
    assert "<meta http-equiv=\"refresh\"" not in html
    chart = client.get(f"/plans/{plan_id}/placement.png")
    assert chart.status_code == 200 and chart.data.startswith(PNG_SIGNATURE)


def test_an_infeasible_plan_page_shows_the_diagnosis_and_every_suggestion(app, client):
    data = fleet(domains={"rack1": 900})
    plan = plan_checked(data)
    assert plan.status == optsched.Status.infeasible and plan.suggestions
    html = page(client, f"/plans/{finished(app, ResourceKind.plan, data, plan)}")
    assert 'id="diagnosis"' in html
    for line in plan.diagnosis:
        assert str(escape(line)) in html
    suggestions = rows(html, "suggestions")
    assert len(suggestions) == len(plan.suggestions)
    for s, row in zip(plan.suggestions, suggestions, strict=True):
        assert f"<code>{s.target}</code>" in row and str(escape(s.message)) in row


def test_user_text_is_escaped_in_pages_and_drawn_literally_in_charts(app, client):
    data = workload(
        [device("<g>", "m", 2, [(100, 1.0), (50, 0.5)])],
        [job("<script>alert(1)</script>", work=2, p=0.5), job("$\\frac{$", work=1, p=0.5)],
        power={"budget_w": 150},
    )
    data["name"] = "<img src=x onerror=alert(1)>"
    plan_id = finished(app, ResourceKind.plan, data, plan_checked(data))
    html = page(client, f"/plans/{plan_id}")
    assert "<script>" not in html and "<img src=x" not in html and "<g>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert client.get(f"/plans/{plan_id}/placement.png").status_code == 200  # `$\frac{$` is no math text
    listing = page(client, "/")
    assert "<img src=x" not in listing and "&lt;img src=x onerror=alert(1)&gt;" in listing
    missing = page(client, "/plans/%3Cscript%3Ealert(1)", 404)
    assert "<script>" not in missing and "&lt;script&gt;" in missing


def test_the_index_lists_every_kind_newest_first_with_links_and_figures(app, client):
    plan_data = tiny_workload("first")
    plan = plan_checked(plan_data)
    plan_id = finished(app, ResourceKind.plan, plan_data, plan)
    queue = night_queue("tonight")
    night = optsched.plan_night(queue, start=datetime(2026, 12, 1, 22), hours=8)
    assert verify_timeline(queue, night) == []
    night_id = finished(app, ResourceKind.night, queue, night)
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


def test_night_and_frontier_pages_show_their_charts(app, client):
    queue = night_queue()
    night = optsched.plan_night(queue, start="2026-12-01T22:00", hours=8)
    assert verify_timeline(queue, night) == []
    night_id = finished(app, ResourceKind.night, queue, night)
    html = page(client, f"/night-plans/{night_id}")
    assert f'src="/night-plans/{night_id}/gantt.png"' in html and f'src="/night-plans/{night_id}/power.png"' in html
    assert len(rows(html, "jobs")) == len(night.jobs)
    assert client.get(f"/night-plans/{night_id}/gantt.png").data.startswith(PNG_SIGNATURE)

    data = tiny_workload()
    frontier = optsched.frontier(data, budgets=[300, 600])
    frontier_id = finished(app, ResourceKind.frontier, data, frontier)
    html = page(client, f"/frontiers/{frontier_id}")
    assert f'src="/frontiers/{frontier_id}/plot.png"' in html
    assert len(rows(html, "points")) == 2
    assert client.get(f"/frontiers/{frontier_id}/plot.png").data.startswith(PNG_SIGNATURE)
    page(client, f"/frontiers/{night_id}", 404)  # an id of another kind


def test_an_unfinished_plan_page_reloads_itself_and_its_chart_is_409(client):
    plan_id = client.post("/v1/plans", json=tiny_workload()).get_json()["id"]
    html = page(client, f"/plans/{plan_id}")
    assert '<meta http-equiv="refresh" content="2">' in html and 'id="status">queued<' in html
    assert client.get(f"/plans/{plan_id}/placement.png").status_code == 409


@pytest.fixture
def guarded(make_app):
    return make_app(API_TOKEN="s3cret-token").test_client()


def test_pages_need_the_token_as_bearer_or_once_as_a_query_parameter(guarded):
    login = page(guarded, "/", 401)
    assert '<form method="get">' in login and 'name="token"' in login
    assert guarded.get("/").headers["WWW-Authenticate"].startswith("Bearer")
    assert "not the one" in page(guarded, "/?token=wrong", 401)
    assert guarded.get("/plans/x/placement.png").status_code == 401
    page(guarded, "/", headers={"Authorization": "Bearer s3cret-token"})
    assert guarded.get("/static/viewer.css").status_code == 200  # the stylesheet is public

    response = guarded.get("/plans/abc?token=s3cret-token&x=1&_external=1&plan_id=evil")
    assert response.status_code == 303
    assert response.headers["Location"] == "/plans/abc?x=1"
    cookie = response.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "s3cret-token" not in cookie
    page(guarded, "/plans/abc", 404)  # the cookie now opens the pages
    page(guarded, "/")
    # the cookie is no bearer token for the API
    assert guarded.get("/v1/plans").status_code == 401
