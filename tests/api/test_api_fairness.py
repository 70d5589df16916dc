"""Fairness objectives through the REST service: the schema lists them, a plan solves and verifies, the plan
page shows per-team shares, and a bad team is a 422 naming the field."""

from __future__ import annotations

from datetime import datetime

import optsched
from optsched.verify.timeline import verify_timeline
from tests.api.helpers import assert_verified
from tests.api.test_api_viewer import finished, page, rows
from tests.conftest import plan_checked
from tests.support.factories import device, job, workload
from tests.support.polling import poll

TEAMS = workload(
    [device("g", "m", 6, [(300, 1.0)])],
    [job("a", p=1.0, team="vision"), job("b", p=1.0, team="vision"), job("c", p=1.0, team="speech")],
    teams={"vision": 2.0, "speech": 1.0},
    objective="team_max_min",
)


def test_the_openapi_document_lists_every_registered_objective(client):
    spec = client.get("/openapi.json").get_json()
    objective = spec["components"]["schemas"]["Workload"]["properties"]["objective"]
    assert objective["enum"] == list(optsched.OBJECTIVES)


def test_a_team_max_min_plan_over_rest_verifies(live):
    response = live.post("/v1/plans", json=TEAMS, headers={"Prefer": "respond-async"})
    assert response.status_code in (201, 202), response.get_json()
    body = poll(live, response.headers["Location"])
    assert body["status"] == "optimal"
    assert_verified(TEAMS, body)
    assert {t["team"]: t["devices"] for t in body["plan"]["teams"]} == {"vision": 4, "speech": 2}
    assert body["plan"]["fairness"] == body["plan"]["objective"]


def test_a_job_outside_the_listed_teams_is_a_4xx_naming_it(client):
    bad = {**TEAMS, "jobs": [*TEAMS["jobs"], job("d", team="audio")]}
    response = client.post("/v1/plans", json=bad)
    assert response.status_code == 422
    assert "jobs[3].team" in response.get_data(as_text=True)


def test_the_plan_page_shows_each_teams_share(app, client):
    plan = plan_checked(TEAMS)
    html = page(client, f"/plans/{finished(app, 'plan', TEAMS, plan)}")
    teams = rows(html, "teams")
    assert len(teams) == 2
    assert "<td>vision</td>" in teams[0] and "66.7 %" in teams[0] and "<td class=\"num\">4</td>" in teams[0]
    assert "fairness" in html
    plain = workload([device("g", "m", 2, [(300, 1.0)])], [job("a")])
    assert 'id="teams"' not in page(client, f"/plans/{finished(app, 'plan', plain, plan_checked(plain))}")


def test_the_night_page_shows_each_teams_device_hours_and_worst_rho(app, client):
    # Two p = 1 jobs of 2 h on 2 devices, one per team: each team holds 2 device-hours (half), rho 1.
    queue = workload(
        [device("g", "m", 2, [(100, 1.0)])],
        [job("a", work=2.0, p=1.0, team="x"), job("b", work=2.0, p=1.0, team="y")],
        objective="max_min_speedup",
    )
    night = optsched.plan_night(queue, start=datetime(2026, 12, 1, 22), hours=8)
    assert verify_timeline(queue, night) == []
    html = page(client, f"/night-plans/{finished(app, 'night', queue, night)}")
    teams = rows(html, "teams")
    assert len(teams) == 2
    assert "<td>x</td>" in teams[0] and "50.0 %" in teams[0] and "2.00" in teams[0]
    assert 'id="max-rho"' in html and 'id="night-fairness"' in html
    plain = workload([device("g", "m", 1, [(100, 1.0)])], [job("a", work=1.0)])
    plain_night = optsched.plan_night(plain, start=datetime(2026, 12, 1, 22), hours=4)
    assert 'id="teams"' not in page(client, f"/night-plans/{finished(app, 'night', plain, plain_night)}")
