"""Promise 3: limits hold. Body size (413), placement model size (422 naming OPTSCHED_MAX_VARIABLES), document
shape (422 with the path), the solve queue bound (503 + Retry-After, nothing stored, exact under concurrency),
and time limits: a solve given 2 s ends by 2 s + grace, also when HiGHS does not stop (the pool kills it)."""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from datetime import datetime

import pytest

from api import services
from api.services import EXTENSION
from optsched.infra.pool import ProcessPool
from optsched.schema.limits import MAX_DEPTH, MAX_ITEMS, placement_variables
from optsched.schema.workload import Workload
from optsched.service.kinds import runner
from optsched.service.settings import ConfigError, load_settings
from optsched.testing import solvers
from optsched.testing.instances import generate
from optsched.verify.placement import verify
from tests.api.helpers import tiny_workload
from tests.support.factories import device, job, workload
from tests.support.polling import poll
from tests.support.timing import past_deadline

pytestmark = pytest.mark.slow  # real servers and solver processes, at CI's budgets

GRACE_S = 1.0
# Process start, the pool's polling and a loaded 2-core machine: a solve may end this much past its deadline.
SLACK_S = 1.5


def seconds(resource: dict, start: str = "started_at", end: str = "finished_at") -> float:
    return (datetime.fromisoformat(resource[end]) - datetime.fromisoformat(resource[start])).total_seconds()


def v1_post_routes(app) -> list[str]:
    return sorted(
        str(rule) for rule in app.url_map.iter_rules() if str(rule).startswith("/v1/") and "POST" in rule.methods
    )


# -- body size --------------------------------------------------------------------------------------------


def test_every_post_route_answers_413_past_the_body_limit_and_stores_nothing(make_app):
    app = make_app(MAX_BODY_MB=0.01)  # 0.01 MiB = 10,485 bytes
    client = app.test_client()
    routes = v1_post_routes(app)
    assert "/v1/plans" in routes and "/v1/verify" in routes
    body = json.dumps({"name": "x" * 20_000})
    for route in routes:
        response = client.post(route, data=body, content_type="application/json")
        assert response.status_code == 413, (route, response.status_code)
        assert response.mimetype == "application/problem+json"
        assert "10,485 bytes" in response.get_json()["detail"]
    assert services(app).store.list()[0] == []


# -- model size --------------------------------------------------------------------------------------------


def levels(n: int) -> list[tuple[float, float]]:
    return [(100.0 + 10 * k, 1.0 + 0.1 * k) for k in range(n)]


def sized(jobs: int, groups: int, per_group: int) -> dict:
    return workload(
        [device(f"g{g}", "m", 2, levels(per_group)) for g in range(groups)],
        [job(f"j{j}", work=5) for j in range(jobs)],
        options={"time_limit_s": 5},
    )


def test_a_workload_over_max_variables_is_422_naming_the_limit_and_one_at_it_is_accepted(make_app):
    client = make_app(MAX_VARIABLES=120).test_client()
    at_limit = sized(jobs=10, groups=3, per_group=4)  # 10 x 3 x 4 = 120
    assert placement_variables(Workload.load(at_limit)) == 120
    assert client.post("/v1/plans", json=at_limit).status_code == 202
    over = sized(jobs=11, groups=3, per_group=4)  # 132
    response = client.post("/v1/plans", json=over)
    assert response.status_code == 422
    assert response.mimetype == "application/problem+json"
    [error] = response.get_json()["errors"]
    assert error["path"] == "jobs"
    assert "OPTSCHED_MAX_VARIABLES" in error["message"] and "132" in error["message"] and "120" in error["message"]
    assert len(client.get("/v1/plans").get_json()["items"]) == 1  # the rejected one was not stored


def test_the_variable_limit_applies_to_every_resource_that_solves_a_workload(make_app):
    app = make_app(MAX_VARIABLES=100)
    client = app.test_client()
    over = sized(jobs=11, groups=3, per_group=4)
    bodies = {
        "/v1/plans": (over, "jobs"),
        "/v1/frontiers": ({"workload": over}, "workload.jobs"),
        "/v1/night-plans": ({"queue": over, "start": "2026-12-01T22:00:00", "hours": 8}, "queue.jobs"),
    }
    for route in v1_post_routes(app):
        if route not in bodies:
            continue
        body, path = bodies[route]
        response = client.post(route, json=body)
        assert response.status_code == 422, (route, response.get_json())
        assert [e["path"] for e in response.get_json()["errors"]] == [path], (route, response.get_json())


def test_max_variables_is_configured_by_environment_and_a_bad_value_names_it():
    assert load_settings(environ={})["MAX_VARIABLES"] == 2_000_000
    assert load_settings(environ={"OPTSCHED_MAX_VARIABLES": "5000"})["MAX_VARIABLES"] == 5000
    for bad in ("0", "-3", "lots"):
        with pytest.raises(ConfigError, match="OPTSCHED_MAX_VARIABLES"):
            load_settings(environ={"OPTSCHED_MAX_VARIABLES": bad})


@pytest.mark.parametrize(
    "mutate, path",
    [
        (lambda w: w.update(jobs=[1] * (MAX_ITEMS + 1)), "jobs"),
        (lambda w: w["jobs"][0].update(speed_on={f"m{i}": 1.0 for i in range(MAX_ITEMS + 1)}), "jobs[0].speed_on"),
        (lambda w: w.update(name=_nested(MAX_DEPTH + 5)), "name" + "[0]" * (MAX_DEPTH - 1)),
    ],
    ids=["long-list", "wide-object", "deep"],
)
def test_documents_too_large_to_validate_cheaply_are_422_with_the_path_at_once(make_app, mutate, path):
    client = make_app().test_client()
    data = tiny_workload()
    mutate(data)
    response = client.post("/v1/plans", json=data)
    assert response.status_code == 422
    # One error for the whole oversized part, before any item is validated (bench/results/reliability.md times it).
    assert [e["path"] for e in response.get_json()["errors"]] == [path]


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


# -- the queue bound --------------------------------------------------------------------------------------


def test_a_full_queue_answers_503_with_retry_after_exactly_at_its_bound_under_concurrency(make_app):
    app = make_app(QUEUE_SIZE=5)  # no solver processes: nothing leaves the queue
    statuses: list[int] = []
    retry_after: list[str] = []
    lock = threading.Lock()

    def post(i: int) -> None:
        response = app.test_client().post("/v1/plans", json=tiny_workload(f"w{i}"), headers={"Prefer": "respond-async"})
        with lock:
            statuses.append(response.status_code)
            if response.status_code == 503:
                assert response.mimetype == "application/problem+json"
                assert response.get_json()["type"] == "urn:optsched:problem:queue-full"
                retry_after.append(response.headers["Retry-After"])

    threads = [threading.Thread(target=post, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(statuses) == [202] * 5 + [503] * 15
    assert all(value.isdigit() and int(value) >= 1 for value in retry_after), retry_after
    listed = app.test_client().get("/v1/plans", query_string={"limit": 100}).get_json()["items"]
    assert len(listed) == 5  # a 503 stores nothing
    assert services(app).queue.depth() == 5


# -- time limits ------------------------------------------------------------------------------------------


def hard_workload(time_limit_s: float = 2.0) -> dict:
    """60 jobs at gap 0: plans come quickly, the proof does not (optsched/testing/instances.py size T)."""
    return generate("T", 0, options={"time_limit_s": time_limit_s, "mip_gap": 0.0}).model_dump(mode="json")


def test_a_hard_solve_given_2_s_ends_by_2_s_plus_grace_with_a_verified_plan(make_app):
    app = make_app(START_WORKERS=True, WORKERS=1, SOLVE_GRACE_S=GRACE_S)
    client = app.test_client()
    data = hard_workload(2.0)
    response = client.post("/v1/plans", json=data, headers={"Prefer": "respond-async"})
    assert response.status_code == 202
    final = poll(client, response.headers["Location"])
    assert final["status"] == "time_limit", final["status"]
    assert seconds(final) <= past_deadline(2.0 + GRACE_S, SLACK_S), seconds(final)
    assert verify(data, final["plan"]) == []


def test_a_solve_whose_highs_ignores_its_limit_is_killed_at_2_s_plus_grace_and_the_pool_goes_on(make_app):
    app = make_app()
    store = services(app).store
    pool = ProcessPool(store, workers=1, grace_s=GRACE_S, runner=runner(solvers.ignore_time_limit))
    # shutdown(app) stops this pool; the store, retention sweep and throttle stay the app's own.
    app.extensions[EXTENSION] = replace(services(app), queue=pool)
    pool.start()
    client = app.test_client()
    data = hard_workload(2.0)
    response = client.post("/v1/plans", json=data, headers={"Prefer": "respond-async"})
    final = poll(client, response.headers["Location"])
    # The worker streamed its incumbents before the kill, so the overrun keeps the best plan (never no_solution).
    assert final["status"] == "time_limit", final
    assert verify(data, final["plan"]) == []
    assert "overran its time limit of 2 s" in final["error"]
    assert 2.0 + GRACE_S - 0.2 <= seconds(final) <= past_deadline(2.0 + GRACE_S, SLACK_S), seconds(final)
    after = tiny_workload("after the kill")
    done = poll(client, client.post("/v1/plans", json=after).headers["Location"])
    assert done["status"] == "optimal"
    assert verify(after, done["plan"]) == []
