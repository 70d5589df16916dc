"""Fairness objectives through the REST service: the schema lists them, a plan solves and verifies, the plan
page shows per-team shares, and a bad team is a 422 naming the field."""

from __future__ import annotations

import optsched
from tests.api.helpers import assert_verified, poll
from tests.api.test_api_viewer import finished, page, rows
from tests.conftest import plan_checked
from tests.support.factories import device, job, workload

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
