"""Issue 25: a re-plan is held to the limits a plan obeys, on the workload the change derives, before anything
is stored or queued: jobs and placement variables by counting (40,000 added jobs to a 1-job plan were a 202 and
5.5 s of work in the HTTP process), repairs never beyond a group's original count (999,990 repaired devices on a
4-device group were accepted), a pin of a job the plan does not run (a 202 that failed later), the solve budget;
and again in the worker, on the changed workload it derives."""

from __future__ import annotations

import time

import pytest

from optsched.infra.queue import SolveTask
from optsched.infra.store import JobState
from optsched.service.kinds import solve_task
from tests.hardening.conftest import problem
from tests.hardening.test_costs import big_plan, big_workload
from tests.support.timing import loaded


def finished_plan(app, workload: dict, plan: dict) -> str:
    """A plan stored as finished (what a worker would have written)."""
    store = app.extensions["optsched"].store
    record, _ = store.create(workload, kind="plan", params={})
    claimed = store.claim(record.id)
    assert store.finish(record.id, claimed.attempts, JobState.finished, verdict="optimal", plan=plan)
    return record.id


def new_jobs(n: int, prefix: str = "n") -> list[dict]:
    return [{"id": f"{prefix}{i}", "work_hours": 1.0, "parallel_fraction": 0.5} for i in range(n)]


def errors(response) -> dict[str, str]:
    return {e["path"]: e["message"] for e in problem(response, 422)["errors"]}


def replans_stored(app) -> int:
    return len(app.extensions["optsched"].store.list(kind="replan", limit=100)[0])


def test_adding_40000_jobs_to_a_one_job_plan_is_refused_at_add_jobs_by_counting(make_app):
    app = make_app()
    client = app.test_client()
    parent = finished_plan(app, big_workload(1), big_plan(1))
    started = time.process_time()
    found = errors(client.post(f"/v1/plans/{parent}/replans", json={"add_jobs": new_jobs(40_000)}))
    assert list(found) == ["add_jobs"] and "40,000" in found["add_jobs"] and "OPTSCHED_MAX_JOBS" in found["add_jobs"]
    # Counted before the change is parsed: parsing the JSON is most of it (5.5 s before, most of it validation).
    assert time.process_time() - started < loaded(2.0)
    assert replans_stored(app) == 0


def test_kept_plus_added_jobs_and_variables_are_counted_against_the_limits(make_app):
    app = make_app(MAX_JOBS=60, MAX_VARIABLES=100)
    client = app.test_client()
    parent = finished_plan(app, big_workload(50), big_plan(50))
    # 50 kept + 11 added: each list alone is within MAX_JOBS, the changed workload is not.
    found = errors(client.post(f"/v1/plans/{parent}/replans", json={"add_jobs": new_jobs(11)}))
    assert list(found) == ["add_jobs"] and "51" not in found["add_jobs"] and "61 jobs" in found["add_jobs"]
    # Removing 10 makes room for them (51 jobs), but not for 51 x 2 levels under MAX_VARIABLES = 100.
    two_levels = big_workload(50)
    two_levels["devices"][0]["power_levels"].append({"cap_w": 200.0, "speed": 0.8})
    parent2 = finished_plan(app, two_levels, big_plan(50))
    change = {"remove_jobs": [f"j{i}" for i in range(10)], "add_jobs": new_jobs(11)}
    found = errors(client.post(f"/v1/plans/{parent2}/replans", json=change))
    assert list(found) == ["add_jobs"] and "OPTSCHED_MAX_VARIABLES" in found["add_jobs"]
    ok = client.post(f"/v1/plans/{parent}/replans", json={"remove_jobs": ["j0"], "add_jobs": new_jobs(10)})
    assert ok.status_code == 202, ok.get_json()
    assert replans_stored(app) == 1


def test_repairs_never_go_beyond_the_groups_original_count(make_app):
    app = make_app()
    client = app.test_client()
    parent = finished_plan(app, big_workload(4), big_plan(4))
    repairs = {"device_repairs": [{"device": "g", "count": 999_990}]}
    found = errors(client.post(f"/v1/plans/{parent}/replans", json=repairs))
    assert list(found) == ["device_repairs[0].count"] and "it had 4" in found["device_repairs[0].count"]
    # A failure and its repair in one change is within the count.
    fine = {"device_failures": [{"device": "g", "count": 1}], "device_repairs": [{"device": "g", "count": 1}]}
    assert client.post(f"/v1/plans/{parent}/replans", json=fine).status_code == 202


def test_pinning_a_job_that_is_not_running_is_a_422_at_its_pin(make_app):
    app = make_app()
    client = app.test_client()
    plan = big_plan(4)
    plan["placements"] = [
        dict(p, admitted=False, allocations=[]) if p["job"] == "j2" else p for p in plan["placements"]
    ]
    parent = finished_plan(app, big_workload(4), plan)
    found = errors(client.post(f"/v1/plans/{parent}/replans", json={"pin": ["j2"]}))
    assert list(found) == ["pin[0]"] and "not running" in found["pin[0]"]
    assert client.post(f"/v1/plans/{parent}/replans", json={"pin": ["j1"]}).status_code == 202


def test_a_replan_whose_solve_budget_is_above_the_limit_is_refused(make_app):
    app = make_app(MAX_SOLVE_S=10.0)
    client = app.test_client()
    workload = big_workload(2) | {"options": {"time_limit_s": 6.0}}  # two solves of 6 s may hold a solver 12 s
    parent = finished_plan(app, workload, big_plan(2))
    found = errors(client.post(f"/v1/plans/{parent}/replans", json={}))
    assert "OPTSCHED_MAX_SOLVE_S" in found["workload.options.time_limit_s"]


def test_the_worker_checks_the_changed_workload_again(monkeypatch):
    # A row stored before these checks (or by a server with higher limits) is refused by the worker, not solved.
    monkeypatch.setenv("OPTSCHED_MAX_JOBS", "3")
    document = {"workload": big_workload(1), "plan": big_plan(1), "change": {"add_jobs": new_jobs(3)}}
    outcome, errors_ = solve_task(SolveTask(kind="replan", workload=document, params={"parent": "p"}))
    assert outcome == "invalid"
    assert [e["path"] for e in errors_] == ["add_jobs"] and "OPTSCHED_MAX_JOBS" in errors_[0]["message"]


@pytest.mark.parametrize("count", [1, 2])
def test_an_ordinary_replan_is_accepted(make_app, count):
    app = make_app()
    parent = finished_plan(app, big_workload(4), big_plan(4))
    change = {"device_failures": [{"device": "g", "count": count}]}
    assert app.test_client().post(f"/v1/plans/{parent}/replans", json=change).status_code == 202
