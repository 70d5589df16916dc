"""A bounded cost for every request: sizes, time limits and worst-case solver time are checked against the
server's settings before anything is stored (422 naming the path and the setting), charts too large to draw in
the HTTP process are not drawn, and /v1/verify is linear in its input. The limits are published in the spec."""

from __future__ import annotations

import copy
import json
import time

import pytest

from api.examples import NIGHT_QUEUE, WORKLOAD
from optsched.infra.store import JobState
from optsched.night import plan_night
from optsched.schema.plan import Plan
from optsched.schema.workload import Workload
from optsched.verify.placement import verify
from tests.api.helpers import drawn
from tests.hardening.conftest import paths, problem
from tests.support.timing import loaded


def workload(**changes) -> dict:
    return {**copy.deepcopy(WORKLOAD), **changes}


def errors(response) -> dict[str, str]:
    return {e["path"]: e["message"] for e in problem(response, 422)["errors"]}


def test_each_size_limit_is_a_422_naming_its_path_and_setting_and_nothing_is_stored(make_app):
    client = make_app(MAX_JOBS=3, MAX_DEVICES=10, MAX_DEVICE_GROUPS=2, MAX_LEVELS=2, MAX_TIME_LIMIT_S=60).test_client()
    body = workload()
    body["jobs"] = [dict(body["jobs"][1], id=f"j{i}") for i in range(4)]
    body["devices"] = [
        {
            "id": f"g{i}",
            "model": "m",
            "count": 4,
            "power_levels": [{"cap_w": 100.0 + k, "speed": 1.0} for k in range(3)],
        }
        for i in range(3)
    ]
    body["power"] = {"budget_w": 1000.0}
    body["options"] = {"time_limit_s": 61.0}
    found = errors(client.post("/v1/plans", json=body))
    assert "OPTSCHED_MAX_JOBS" in found["jobs"] and "4 jobs" in found["jobs"]
    assert "OPTSCHED_MAX_DEVICE_GROUPS" in found["devices"] or "OPTSCHED_MAX_DEVICES" in found["devices"]
    assert "OPTSCHED_MAX_LEVELS" in found["devices[0].power_levels"]
    assert "OPTSCHED_MAX_TIME_LIMIT_S" in found["options.time_limit_s"]
    assert client.get("/v1/plans").get_json()["items"] == []


def test_a_million_devices_and_a_day_long_time_limit_are_refused_by_default(make_app):
    client = make_app().test_client()
    big = workload()
    big["devices"][0]["count"] = 1_000_000
    assert "OPTSCHED_MAX_DEVICES" in errors(client.post("/v1/plans", json=big))["devices"]
    slow = workload(options={"time_limit_s": 86_400.0})
    assert "OPTSCHED_MAX_TIME_LIMIT_S" in errors(client.post("/v1/plans", json=slow))["options.time_limit_s"]


def test_a_frontier_of_100_budgets_at_60_s_is_refused_and_one_within_the_solve_budget_is_accepted(make_app):
    client = make_app(MAX_TIME_LIMIT_S=60).test_client()
    many = {"workload": workload(options={"time_limit_s": 60.0}), "budgets": [1000.0 + i for i in range(100)]}
    assert "OPTSCHED_MAX_BUDGETS" in errors(client.post("/v1/frontiers", json=many))["budgets"]
    within = {"workload": workload(options={"time_limit_s": 60.0}), "budgets": [1000.0 + i for i in range(50)]}
    assert client.post("/v1/frontiers", json=within).status_code == 202  # 60 s x (50 + 2) = 3,120 s <= 3,600 s
    over = {"workload": workload(options={"time_limit_s": 60.0}), "budgets": [1000.0 + i for i in range(50)]}
    client = make_app(MAX_TIME_LIMIT_S=60, MAX_SOLVE_S=3_000).test_client()
    message = errors(client.post("/v1/frontiers", json=over))["workload.options.time_limit_s"]
    assert "OPTSCHED_MAX_SOLVE_S" in message and "3,120 s" in message


def test_a_night_that_could_hold_a_solver_for_hours_is_refused(make_app):
    client = make_app().test_client()
    queue = copy.deepcopy(NIGHT_QUEUE)
    queue["options"] = {"time_limit_s": 10.0}
    queue["jobs"] = [{"id": f"j{i}", "work_hours": 1.0, "parallel_fraction": 0.5} for i in range(200)]
    body = {"queue": queue, "start": "2026-12-01T22:00", "hours": 168.0, "budget_s": 3_590.0}
    message = errors(client.post("/v1/night-plans", json=body))["budget_s"]
    assert "OPTSCHED_MAX_SOLVE_S" in message  # a planning budget of 3,590 s + an event's 10 s + the bound's 10 s
    assert paths(client.post("/v1/night-plans", json={**body, "hours": 169.0})) == ["hours"]
    queue["jobs"] = queue["jobs"][:20]
    del body["budget_s"]  # the default planning budget: 20 s up to 150 jobs
    assert client.post("/v1/night-plans", json=body).status_code == 202


@pytest.mark.slow
def test_verify_is_limited_like_plans_and_linear_in_its_input(make_app):
    client = make_app(MAX_JOBS=100).test_client()
    assert list(errors(client.post("/v1/verify", json={"workload": big_workload(1), "plan": big_plan(101)}))) == [
        "plan.placements"
    ]
    assert client.post("/v1/verify", json={"workload": big_workload(100), "plan": big_plan(100)}).status_code == 200
    # The verifier itself: 24,000 placements took 21 s when it scanned every allocation per placement.
    w, p = Workload.load(big_workload(24_000)), Plan.model_validate(big_plan(24_000))
    started = time.monotonic()
    assert verify(w, p) == verify(w, p)[:]
    assert time.monotonic() - started < loaded(3.0), "24,000 placements verified twice: seconds, not 42 s"


def big_workload(n: int) -> dict:
    return {
        "devices": [{"id": "g", "model": "m", "count": n, "power_levels": [{"cap_w": 300.0, "speed": 1.0}]}],
        "jobs": [{"id": f"j{i}", "work_hours": 1.0, "parallel_fraction": 0.5} for i in range(n)],
    }


def big_plan(n: int) -> dict:
    placement = {"priority": "normal", "admitted": True, "speedup": 1.0, "runtime_hours": 1.0, "meets_deadline": None,
                 "allocations": [{"device": "g", "count": 1, "cap_w": 300.0, "speed": 1.0, "work_fraction": 1.0}]}
    return {"workload": "w", "objective_name": "weighted_speedup", "status": "optimal", "objective": 0.0,
            "bound": None, "gap": None, "solve_seconds": 0.0, "weighted_speedup": 0.0, "power_w": 0.0,
            "placements": [dict(placement, job=f"j{i}") for i in range(n)]}


def finished_night(app, queue: dict, hours: float = 2.0) -> str:
    """A night plan solved here and stored as finished (what a worker would have written)."""
    store = app.extensions["optsched"].store
    params = {"start": "2026-12-01T22:00:00", "hours": hours, "preempt": False, "restart_hours": 0.1}
    record, _ = store.create(queue, kind="night", params=params)
    claimed = store.claim(record.id)
    result = plan_night(queue, **params)
    verdict = "met" if result.ok else "missed"
    document = result.model_dump(mode="json", by_alias=True)
    assert store.finish(record.id, claimed.attempts, JobState.finished, verdict=verdict, plan=document)
    return record.id


@pytest.mark.slow
def test_a_chart_too_large_to_draw_is_a_409_at_once_and_a_small_one_is_drawn(make_app):
    app = make_app(MAX_CHART_ROWS=50)
    client = app.test_client()
    queue = {"name": "wide", "devices": [{"id": "g", "model": "A100-SXM", "count": 3000}],
             "jobs": [{"id": "a", "work_hours": 1.0, "parallel_fraction": 0.99}], "options": {"time_limit_s": 5.0}}
    wide = finished_night(app, queue)
    started = time.monotonic()
    body = problem(client.get(f"/v1/night-plans/{wide}/gantt.png"), 409)
    assert "OPTSCHED_MAX_CHART_ROWS" in body["detail"] and "3,000 rows" in body["detail"]
    assert time.monotonic() - started < loaded(1.5)  # not drawn: the 3,000-row chart took 44 s and 565 MB
    small = finished_night(app, {**queue, "devices": [{"id": "g", "model": "A100-SXM", "count": 4}]})
    chart = drawn(client, f"/v1/night-plans/{small}/gantt.png")
    assert chart.status_code == 200 and chart.data.startswith(b"\x89PNG")
    as_bytes = drawn(client, f"/v1/night-plans/{small}/gantt.png", headers={"Accept": "application/octet-stream"})
    assert as_bytes.mimetype == "application/octet-stream" and as_bytes.data == chart.data


def test_the_limits_are_published_in_the_served_spec(make_app):
    spec = (
        make_app(MAX_JOBS=7, MAX_BUDGETS=9, MAX_TIME_LIMIT_S=11, MAX_NIGHT_HOURS=13)
        .test_client()
        .get("/openapi.json")
        .get_json()
    )
    schemas = spec["components"]["schemas"]
    assert schemas["Workload"]["properties"]["jobs"]["maxItems"] == 7
    assert schemas["NightQueue"]["properties"]["jobs"]["maxItems"] == 7
    assert schemas["Options"]["properties"]["time_limit_s"]["maximum"] == 11
    assert schemas["NightPlanRequest"]["properties"]["hours"]["maximum"] == 13
    budgets = schemas["FrontierRequest"]["properties"]["budgets"]
    assert [n["maxItems"] for n in budgets.get("anyOf", [budgets]) if n.get("type") == "array"] == [9]
    assert json.dumps(spec)  # still a JSON document
