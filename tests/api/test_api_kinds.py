"""Resource kinds in the store and the queue: every kind shares one table and one pool; the registry
(optsched.service.kinds.KINDS) covers every kind, each with its routes and its solve."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text

from api import create_app, shutdown
from api.examples import QUEUEING_STUDY
from optsched.infra.pool import ProcessPool
from optsched.infra.queue import SolveTask
from optsched.infra.store import JobState, PlanStore
from optsched.night.bound import BOUND_TIME_LIMIT_S
from optsched.night.planner import NIGHT_BUDGET_S
from optsched.service.kinds import KINDS, RUNNER, budget_s, solve_task, statuses_of
from optsched.verify.placement import verify
from optsched.verify.timeline import verify_timeline
from tests.api.helpers import night_queue, tiny_workload

NIGHT = {"start": "2026-12-01T22:00:00", "hours": 8.0, "preempt": False, "restart_hours": 0.1}


KIND_NAMES = {"plan", "night", "frontier", "queueing", "replan"}


def test_every_kind_is_registered_with_its_statuses():
    assert set(KINDS) == KIND_NAMES
    for spec in KINDS.values():
        statuses = statuses_of(spec)
        assert {"queued", "solving", "cancelled", "failed", "no_solution", *spec.verdicts} == set(statuses)
        assert len(statuses) == len(set(statuses)) and "finished" not in statuses


def test_every_kind_has_its_routes_in_the_openapi_document(tmp_path):
    app = create_app({"DATABASE_URL": f"sqlite:///{tmp_path}/spec.db", "START_WORKERS": False, "AUTH": "off"})
    try:
        operations = {op["operationId"]: path for path, item in app.api_doc["paths"].items() for op in item.values()}
    finally:
        shutdown(app)
    for spec in KINDS.values():
        item = f"/v1/{spec.collection}/{{{spec.id_param}}}"
        assert operations[f"get{spec.camel}"] == item and operations[f"delete{spec.camel}"] == item
        assert operations[f"create{spec.camel}"].endswith(f"/{spec.collection}")
        for chart in spec.charts:
            assert operations[f"get{spec.camel}{chart.operation}"] == f"{item}/{chart.file}"
        schemas = app.api_doc["components"]["schemas"]
        assert set(schemas[f"{spec.camel}Status"]["enum"]) == set(statuses_of(spec))
        assert spec.result_field in schemas[f"{spec.camel}Resource"]["properties"]


def test_solve_task_runs_each_kind_through_the_python_api_and_the_results_verify():
    data = tiny_workload()
    outcome, (state, document) = solve_task(SolveTask("plan", data))
    assert (outcome, state) == ("result", "optimal")
    assert verify(data, document) == []

    queue = night_queue()
    outcome, (state, document) = solve_task(SolveTask("night", queue, NIGHT))
    assert (outcome, state) == ("result", "met")
    assert verify_timeline(queue, document) == []
    assert document["start"] == "2026-12-01T22:00:00" and document["hours"] == 8.0

    outcome, (state, document) = solve_task(SolveTask("frontier", data, {"budgets": [450, 300, 600]}))
    assert (outcome, state) == ("result", "done")
    assert [p["budget_w"] for p in document["points"]] == [300, 450, 600]


def test_solve_task_reaches_the_queueing_and_replan_kinds():
    outcome, (state, document) = solve_task(SolveTask("queueing", QUEUEING_STUDY, {"method": "analytic", "seed": 0}))
    assert (outcome, state) == ("result", "done") and document["front"]

    data = tiny_workload()
    _, (_, plan) = solve_task(SolveTask("plan", data))
    change = {"remove_jobs": ["b"]}
    outcome, (state, document) = solve_task(SolveTask("replan", {"workload": data, "plan": plan, "change": change}))
    assert (outcome, state) == ("result", "optimal")
    assert verify(document["workload"], document["plan"]) == []
    assert [p["job"] for p in document["plan"]["placements"]] == ["a"]


def test_solve_task_reports_invalid_input_and_failures_instead_of_raising():
    queue = night_queue()
    queue["power"] = {"budget_w": 1}  # below the fleet's idle draw
    outcome, errors = solve_task(SolveTask("night", queue, NIGHT))
    assert outcome == "invalid"
    assert [e["path"] for e in errors] == ["power.budget_w"]
    outcome, message = solve_task(SolveTask("night", queue, {"hours": 8}))  # start missing
    assert outcome == "error" and "TypeError" in message


def test_each_kind_is_killed_only_past_its_own_wall_time_bound(tmp_path):
    store = PlanStore(f"sqlite:///{tmp_path}/plans.db")
    data = tiny_workload(time_limit_s=3)
    plan, _ = store.create(data)
    night, _ = store.create(data, kind="night", params=NIGHT)
    default_night, _ = store.create({**data, "options": {}}, kind="night", params=NIGHT)
    budgeted, _ = store.create(data, kind="night", params={**NIGHT, "budget_s": 5.0})
    swept, _ = store.create(data, kind="frontier", params={"budgets": None})
    given, _ = store.create(data, kind="frontier", params={"budgets": [1, 2]})
    assert budget_s(plan) == 3
    # the planning budget (plan_night's default for 2 jobs, or the request's), one event solve's time limit (the
    # queue's, else plan_night's own) and the summary's bound (optsched.night.bound)
    assert budget_s(night) == NIGHT_BUDGET_S + 3 + BOUND_TIME_LIMIT_S
    assert budget_s(default_night) == NIGHT_BUDGET_S + 10 + BOUND_TIME_LIMIT_S
    assert budget_s(budgeted) == 5 + 3 + BOUND_TIME_LIMIT_S
    assert budget_s(swept) == 3 * (12 + 6 + 2)
    assert budget_s(given) == 3 * (2 + 2)
    store.close()


def test_kinds_and_params_round_trip_and_lookups_filter_by_kind(tmp_path):
    store = PlanStore(f"sqlite:///{tmp_path}/plans.db")
    plan, _ = store.create({"name": "p"})
    night, _ = store.create({"name": "n"}, kind="night", params=NIGHT)
    frontier, _ = store.create({"name": "f"}, kind="frontier", params={"budgets": [1.5]})
    assert store.get(night.id).params == NIGHT and store.get(night.id).kind == "night"
    assert store.get(night.id, kind="night").workload == {"name": "n"}
    assert store.get(night.id, kind="plan") is None
    assert store.get(plan.id, kind="plan").params is None
    assert [r.id for r in store.list(kind="frontier")[0]] == [frontier.id]
    assert [r.id for r in store.list()[0]] == [frontier.id, night.id, plan.id]
    store.claim(frontier.id)
    store.finish(frontier.id, 1, JobState.finished, verdict="done", plan={"knee_budget_w": 1.5, "saturation_w": 2.0})
    headlines = {r.id: r.headline for r in store.list(headline=True)[0]}
    assert headlines[frontier.id]["knee_budget_w"] == 1.5 and headlines[frontier.id]["name"] == "f"
    assert headlines[plan.id]["objective"] is None
    assert store.list()[0][0].headline is None
    store.close()


def test_a_store_made_before_kinds_existed_is_upgraded_in_place(tmp_path):
    url = f"sqlite:///{tmp_path}/old.db"
    engine = create_engine(url)
    with engine.begin() as c:
        c.execute(
            text(
                "CREATE TABLE plans (id VARCHAR(32) PRIMARY KEY, status VARCHAR(16) NOT NULL, workload JSON NOT NULL, "
                "plan JSON, idempotency_key VARCHAR(255) UNIQUE, submitted_at DATETIME NOT NULL, "
                "started_at DATETIME, finished_at DATETIME, error TEXT, attempts INTEGER NOT NULL)"
            )
        )
        c.execute(
            text(
                "INSERT INTO plans (id, status, workload, submitted_at, attempts) "
                "VALUES ('old', 'queued', '{\"name\": \"w\"}', '2026-11-01 00:00:00', 0)"
            )
        )
    engine.dispose()
    store = PlanStore(url)
    old = store.get("old")
    assert old.kind == "plan" and old.params is None and old.workload == {"name": "w"}
    night, _ = store.create({"name": "n"}, kind="night", params=NIGHT)
    assert store.get(night.id).params == NIGHT
    assert [r.id for r in store.list(kind="plan")[0]] == ["old"]
    store.close()
    PlanStore(url).close()  # a second open finds nothing to upgrade


@pytest.mark.slow
def test_the_pool_solves_every_kind_and_the_results_verify(tmp_path):
    store = PlanStore(f"sqlite:///{tmp_path}/plans.db")
    pool = ProcessPool(store, workers=1, runner=RUNNER)
    pool.start()
    try:
        data, queue = tiny_workload(), night_queue()
        ids = {
            "plan": store.create(data)[0].id,
            "night": store.create(queue, kind="night", params=NIGHT)[0].id,
            "frontier": store.create(data, kind="frontier", params={"budgets": [300, 600]})[0].id,
        }
        for plan_id in ids.values():
            pool.submit(plan_id)
        records = {kind: pool.wait(plan_id, 60) for kind, plan_id in ids.items()}
    finally:
        pool.stop()
        store.close()
    assert records["plan"].outcome == "optimal"
    assert verify(data, records["plan"].result) == []
    assert records["night"].outcome == "met"
    assert verify_timeline(queue, records["night"].result) == []
    assert records["frontier"].outcome == "done"
    assert len(records["frontier"].result["points"]) == 2
