"""The parts of outage handling one at a time, against a Redis and a PostgreSQL database of each test's own:
the API's 503s and /readyz reasons, a result spooled while the database refuses and replayed once it answers,
the sweep re-enqueueing a job stranded in RQ's intermediate queue, a worker waiting out Redis and stopping on
SIGTERM within seconds."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import update

from optsched.infra.availability import Availability
from optsched.infra.queue import SolveTask
from optsched.infra.rq.context import WorkerContext
from optsched.infra.rq.keys import Keys, job_id
from optsched.infra.rq.queue import RQQueue
from optsched.infra.rq.spool import Answer, Spool, deliver, hold_spooled
from optsched.infra.rq.sweep import housekeeping, redis_uptime_s, sweep
from optsched.infra.store import JobState, PlanStore, plans
from optsched.service.kinds import RUNNER
from optsched.verify.placement import verify
from tests.support.outages import OPTSCHED, session_pids, small_workload

pytestmark = pytest.mark.slow


def _app(database, redis, **config):
    from api import create_app

    app = create_app({"DATABASE_URL": database.url, "QUEUE_URL": redis.url, "QUEUE_NAME": f"q-{uuid.uuid4().hex[:8]}",
                      "API_TOKEN": None, "AUTH": "off", "SYNC_WAIT_S": 0, **config})
    app.config["TESTING"] = True
    return app


def _metrics(client) -> dict:
    """/metrics as {(name, sorted labels): value} (prometheus_client's parser)."""
    from prometheus_client.parser import text_string_to_metric_families

    answer = client.get("/metrics")
    assert answer.status_code == 200, answer.get_data(as_text=True)
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(answer.get_data(as_text=True)) for sample in family.samples}


def _assert_outage(answer, what: str) -> None:
    assert answer.status_code == 503, (answer.status_code, answer.get_data(as_text=True))
    assert answer.mimetype == "application/problem+json"
    body = answer.get_json()
    assert body["type"] == "urn:optsched:problem:dependency-unavailable"
    assert what in body["detail"], body
    assert int(answer.headers["Retry-After"]) >= 1


# Routes that need no database: documentation, static files, health, the login form, /metrics (which says the
# store is down, tested below).
NO_DATABASE = ("static", "swagger.", "openapi", "docs", "health.", "viewer.asset", "viewer.login", "metrics")


def _reads_and_deletes(app, resource_id: str) -> list[tuple[str, str]]:
    """Every GET and DELETE route of the app but those that need no database, its ids filled with `resource_id`
    (enumerated from the url_map, so that a new route cannot escape)."""
    import re

    found = []
    for rule in app.url_map.iter_rules():
        if rule.endpoint.startswith(NO_DATABASE):
            continue
        path = re.sub(r"<[^>]+>", resource_id, rule.rule)
        found += [(method, path) for method in sorted(rule.methods & {"GET", "DELETE"})]
    assert len(found) >= 20, found
    return found


def _wait_redis_uptime(ctx, seconds: float) -> None:
    """The sweep trusts missing leases only once Redis has been up for a lease: wait until it has."""
    deadline = time.monotonic() + 30
    while redis_uptime_s(ctx.keys.redis) < seconds:
        assert time.monotonic() < deadline
        time.sleep(0.2)


def test_a_database_outage_is_a_503_with_retry_after_on_every_route_that_needs_it(own_database, own_redis):
    from api import shutdown

    app = _app(own_database, own_redis)
    client = app.test_client()
    try:
        created = client.post("/v1/plans", json=small_workload(1), headers={"Prefer": "respond-async"})
        assert created.status_code == 202, created.get_json()
        location = created.headers["Location"]

        own_database.refuse()
        try:
            _assert_outage(client.post("/v1/plans", json=small_workload(2)), "the database")
            _assert_outage(client.post("/v1/frontiers", json={"workload": small_workload(2), "budgets": [900]}),
                           "the database")
            for method, path in _reads_and_deletes(app, created.get_json()["id"]):
                _assert_outage(client.open(path, method=method), "the database")
            assert client.post("/v1/verify", json={"workload": small_workload(2), "plan": {}}).status_code != 503
            ready = client.get("/readyz")
            assert ready.status_code == 503 and "the database does not answer" in ready.get_json()["detail"]
            metrics = _metrics(client)  # answers through the outage, and says so
            assert metrics[("optsched_store_up", ())] == 0
            assert sum(v for (name, _), v in metrics.items() if name == "optsched_store_errors_total") >= 1
            assert metrics[("optsched_http_requests_total", (("method", "POST"), ("route", "/v1/plans"),
                                                              ("status", "503")))] >= 1
        finally:
            own_database.allow()

        assert client.get(location).status_code == 200  # the pool reconnects by itself
        assert client.get("/readyz").status_code == 200
    finally:
        shutdown(app)


def test_a_redis_outage_is_a_503_that_stores_nothing_and_readyz_names_redis(own_database, own_redis):
    from api import shutdown

    app = _app(own_database, own_redis)
    client = app.test_client()
    try:
        created = client.post("/v1/plans", json=small_workload(3), headers={"Prefer": "respond-async"})
        assert created.status_code == 202

        own_redis.kill()

        _assert_outage(client.post("/v1/plans", json=small_workload(4), headers={"Idempotency-Key": "k-4"}),
                       "Redis")
        assert client.get(created.headers["Location"]).status_code == 200  # reads need only the database
        assert [p["id"] for p in client.get("/v1/plans").get_json()["items"]] == [created.get_json()["id"]]
        ready = client.get("/readyz")
        assert ready.status_code == 503 and "Redis (the solve queue) does not answer" in ready.get_json()["detail"]
        metrics = _metrics(client)  # answers through the outage, and says so
        assert metrics[("optsched_queue_up", ())] == 0 and metrics[("optsched_store_up", ())] == 1
        assert ("optsched_queue_depth", ()) not in metrics
        cancelled = client.delete(created.headers["Location"])  # cancelled in the store; its horse sees it itself
        assert cancelled.status_code == 200 and cancelled.get_json()["status"] == "cancelled"
    finally:
        shutdown(app)


def test_a_result_the_database_does_not_take_is_spooled_held_and_then_recorded(own_database, own_redis, spool_dir):
    store = PlanStore(own_database.url)
    queue_name = f"q-{uuid.uuid4().hex[:8]}"
    ctx = WorkerContext(store, Keys(own_redis.url, queue_name), RUNNER, lease_s=1.0,
                                 spool_dir=spool_dir, result_retry_s=0.5)
    try:
        data = small_workload(5)
        record, _ = store.create(data)
        claimed = store.claim(record.id)
        outcome, payload = RUNNER.solve(SolveTask.of(claimed, 1))
        answer = Answer(record.id, claimed.attempts, outcome, payload)

        own_database.refuse()
        try:
            written = deliver(ctx, answer, Availability("the database"))
            assert written == spool_dir / f"{record.id}-1{Spool.SUFFIX}"
            assert stat.S_IMODE(written.stat().st_mode) == 0o600
            housekeeping(ctx, Availability("Redis"), Availability("the database"))  # waits it out, keeps the file
            assert written.exists()
        finally:
            own_database.allow()
        assert hold_spooled(ctx, Spool(spool_dir)) == 1
        lease = ctx.keys.lease(record.id)
        assert lease is not None and lease.attempt == claimed.attempts and lease.job.startswith("spooled")
        with store.engine.begin() as c:  # long past any lease: only the spool's lease keeps the sweep away
            c.execute(update(plans).where(plans.c.id == record.id)
                      .values(started_at=datetime.now(UTC) - timedelta(minutes=5)))
        _wait_redis_uptime(ctx, 1.0)
        assert sweep(ctx) == 0
        assert store.get(record.id).status == JobState.solving

        housekeeping(ctx, Availability("Redis"), Availability("the database"))  # what a pool runs, also at start

        done = store.get(record.id)
        assert done.outcome == "optimal" and done.attempts == 1
        assert verify(data, done.plan) == []
        assert Spool(spool_dir).entries() == []
    finally:
        ctx.keys.redis.close()
        store.close()


def test_the_sweep_re_enqueues_a_job_stranded_in_the_intermediate_queue(own_database, own_redis):
    store = PlanStore(own_database.url)
    ctx = WorkerContext(store, Keys(own_redis.url, f"q-{uuid.uuid4().hex[:8]}"), RUNNER,
                                 lease_s=1.0)
    queue = RQQueue(store, own_redis.url, runner=RUNNER, queue_name=ctx.keys.queue_name)
    try:
        record, _ = store.create(small_workload(6))
        with store.engine.begin() as c:
            c.execute(update(plans).where(plans.c.id == record.id)
                      .values(submitted_at=datetime.now(UTC) - timedelta(minutes=5)))
        queue.submit(record.id)
        rq = ctx.keys.queue
        # A worker dequeued it (RQ moves it to its intermediate queue) and died before starting it.
        assert ctx.keys.redis.lmove(rq.key, rq.intermediate_queue.key) == job_id(record.id, 0).encode()
        _wait_redis_uptime(ctx, 1.0)

        assert sweep(ctx) == 0  # first seen there: a live worker moves it on within moments
        time.sleep(1.2)
        assert sweep(ctx) == 1

        assert rq.get_job_ids() == [job_id(record.id, 0)]
        assert rq.intermediate_queue.get_job_ids() == []
        assert sweep(ctx) == 0
    finally:
        queue.stop()
        ctx.keys.redis.close()
        store.close()


def test_a_worker_waits_out_redis_without_crashing_and_stops_within_seconds_of_sigterm(own_database, own_redis,
                                                                                      tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPTSCHED_")}
    env.update(OPTSCHED_DATABASE_URL=own_database.url, OPTSCHED_QUEUE_URL=own_redis.url,
               OPTSCHED_QUEUE_NAME="waits", OPTSCHED_LEASE_S="2", OPTSCHED_SPOOL_DIR=str(tmp_path / "spool"))
    log = tmp_path / "worker.log"
    with log.open("wb") as out:
        worker = subprocess.Popen([str(OPTSCHED), "worker", "--concurrency", "2"], env=env, stdout=out,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while log.read_text().count("*** Listening on") < 2:
            assert worker.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)

        own_redis.kill()
        time.sleep(6)  # several backoff rounds of both workers and the pool
        assert worker.poll() is None
        started = time.monotonic()
        worker.send_signal(signal.SIGTERM)
        worker.wait(30)
        stopped_s = time.monotonic() - started

        text = log.read_text()
        assert stopped_s < 15, f"stopped {stopped_s:.1f} s after SIGTERM:\n{text}"
        assert session_pids(worker.pid) == []
        assert "Traceback" not in text, text
        assert "is dead" not in text.split("Received SIGINT/SIGTERM")[0], text  # no worker died during the outage
        assert text.count("does not answer") <= 8, text  # a line per process and state change, not per retry
    finally:
        if worker.poll() is None:
            worker.kill()
        for pid in session_pids(worker.pid):
            os.kill(pid, signal.SIGKILL)


def test_registry_cleaning_without_redis_is_skipped_not_fatal(own_redis):
    # RQ cleans its registries first thing in work(), outside its loop's retry: Redis lost at that moment killed the
    # worker process (seen once in the SIGTERM test above, when Redis died 0.1 s after the worker started).
    from redis import Redis
    from rq.serializers import JSONSerializer

    from optsched.infra.rq.worker import SolveWorker

    connection = Redis.from_url(own_redis.url)
    worker = SolveWorker(["cleaning"], connection=connection, serializer=JSONSerializer)
    worker.run_maintenance_tasks()
    assert worker.last_cleaned_at is not None and not worker.redis_state.down
    own_redis.kill()
    worker.last_cleaned_at = None
    worker.run_maintenance_tasks()  # raised redis ConnectionError before
    assert worker.last_cleaned_at is None and worker.redis_state.down
    connection.close()
