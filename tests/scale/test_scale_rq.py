"""RQ workers on Redis with the store on PostgreSQL: solves, recovery, cancellation, time limits, the sweep."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import cast

import pytest
from rq.job import Job
from rq.serializers import JSONSerializer
from sqlalchemy import update

from api import services
from optsched.infra.pool import ProcessPool
from optsched.infra.queue import QueueFull
from optsched.infra.rq import context as rq_context
from optsched.infra.rq.keys import job_id
from optsched.infra.rq.lease import Lease, LeaseHolder, hold
from optsched.infra.rq.queue import RQQueue
from optsched.infra.rq.sweep import sweep
from optsched.infra.rq.worker import SolveWorker
from optsched.infra.store import MAX_ATTEMPTS, JobState, PlanRecord, PlanStore, plans
from optsched.service.kinds import RUNNER, runner
from optsched.testing.instances import generate
from tests.api import fakes
from tests.api.helpers import assert_verified, tiny_workload
from tests.scale.conftest import LEASE_S, delete_row_keys
from tests.support.outages import session_pids
from tests.support.polling import poll

pytestmark = pytest.mark.slow  # RQ workers on real Redis and PostgreSQL


def long_workload(time_limit_s: float) -> dict:
    """Quick to find plans, slow to prove exactly: its solve runs its whole time limit and ends `time_limit`."""
    options = {"time_limit_s": time_limit_s, "mip_gap": 0.0}
    return generate("T", 0, options=options).model_dump(mode="json", exclude_none=True)


def wait_for_lease(queue: RQQueue, plan_id: str, timeout_s: float = 30, attempt: int = 1) -> Lease:
    """The lease of the `attempt`-th claim of the row, once a worker's horse holds it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        lease = queue.keys.lease(plan_id)
        if lease is not None and lease.attempt == attempt:
            return lease
        time.sleep(0.05)
    raise AssertionError(f"plan {plan_id} was not taken by a worker within {timeout_s} s")


def gone(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_the_queue_url_chooses_rq_and_without_it_the_embedded_pool_stays(tmp_path):
    from api import create_app, shutdown

    base = {"DATABASE_URL": f"sqlite:///{tmp_path}/p.db", "START_WORKERS": False, "API_TOKEN": None, "AUTH": "off"}
    embedded = create_app(base)
    scaled = create_app({**base, "QUEUE_URL": "redis://127.0.0.1:6379/15", "QUEUE_NAME": "never-used"})
    try:
        assert type(services(embedded).queue) is ProcessPool
        assert type(services(scaled).queue) is RQQueue
        assert services(scaled).queue.keys.queue.name == "never-used"
    finally:
        shutdown(embedded)
        shutdown(scaled)


def test_plans_and_frontiers_solve_on_workers_through_the_api(rq_client):
    before = _metrics(rq_client)
    data = tiny_workload("rq")
    created = rq_client.post("/v1/plans", json=data)
    assert created.status_code == 201, created.get_json()
    assert created.get_json()["status"] == "optimal"
    assert_verified(data, created.get_json())
    assert rq_client.get("/readyz").get_json()["checks"]["queue"] == "ok"

    frontier = rq_client.post("/v1/frontiers", json={"workload": data, "budgets": [300, 500]})
    assert frontier.status_code == 202, frontier.get_json()
    body = poll(rq_client, frontier.headers["Location"], 60)
    assert body["status"] == "done", body
    assert [p["budget_w"] for p in body["frontier"]["points"]] == [300, 500]

    # Solved by work horses in other processes, and counted by the API's /metrics, which reads them from the store.
    after = _metrics(rq_client)
    for kind, outcome in (("plan", "optimal"), ("frontier", "done")):
        key = ("optsched_solves_total", (("kind", kind), ("outcome", outcome)))
        assert after.get(key, 0) - before.get(key, 0) == 1, (kind, outcome)
    assert after[("optsched_workers", ())] == 2 and after[("optsched_queue_up", ())] == 1


def _metrics(client) -> dict:
    """/metrics as {(name, sorted labels): value} (prometheus_client's parser)."""
    from prometheus_client.parser import text_string_to_metric_families

    answer = client.get("/metrics")
    assert answer.status_code == 200, answer.get_data(as_text=True)
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(answer.get_data(as_text=True)) for sample in family.samples}


def test_a_worker_killed_mid_solve_leaves_its_plan_to_another_and_no_process_behind(rq_app, rq_client, workers):
    queue = services(rq_app).queue
    data = long_workload(3)
    created = rq_client.post("/v1/plans", json=data, headers={"Prefer": "respond-async"})
    plan_id = created.get_json()["id"]
    first = wait_for_lease(queue, plan_id)
    victim = next(p for p in workers.alive() if os.getsid(first.pid) == p.pid)

    workers.kill(victim)  # SIGKILL the `optsched worker` process: its worker and its solving horse must follow

    assert gone(first.pid, 5), "the horse of a killed worker kept running"
    assert all(gone(pid, 5) for pid in session_pids(victim.pid)), "a process of the killed worker kept running"
    second = wait_for_lease(queue, plan_id, 20, attempt=2)
    assert os.getsid(second.pid) != victim.pid
    body = poll(rq_client, created.headers["Location"], 30)
    assert body["status"] == "time_limit", body
    assert_verified(data, body)
    assert services(rq_app).store.get(plan_id).attempts == 2


def test_delete_stops_the_solve_on_the_worker_running_it(rq_app, rq_client):
    queue = services(rq_app).queue
    created = rq_client.post("/v1/plans", json=long_workload(30), headers={"Prefer": "respond-async"})
    plan_id = created.get_json()["id"]
    lease = wait_for_lease(queue, plan_id)

    cancelled = rq_client.delete(created.headers["Location"])

    assert cancelled.status_code == 200 and cancelled.get_json()["status"] == "cancelled"
    assert gone(lease.pid, 5), "the worker did not stop the cancelled solve"
    job = Job.fetch(lease.job, connection=queue.keys.redis, serializer=JSONSerializer)
    deadline = time.monotonic() + 5
    while job.get_status() != "stopped" and time.monotonic() < deadline:  # the worker records it after the kill
        time.sleep(0.05)
    assert job.get_status() == "stopped"
    assert rq_client.get(created.headers["Location"]).get_json()["status"] == "cancelled"


# -- in-process workers with stand-in solves (forked from this process, so they see the monkeypatch) -----------


@pytest.fixture
def private(private_pg_url, redis_url, private_queue, monkeypatch):
    """A store, a database and an RQ queue of this test alone, and the worker context bound to them."""
    store = PlanStore(private_pg_url)
    ctx = rq_context.configure(store, redis_url, runner=RUNNER, queue_name=private_queue, grace_s=0.5, lease_s=LEASE_S)
    monkeypatch.setattr(rq_context, "_context", ctx)
    queue = RQQueue(store, redis_url, runner=RUNNER, queue_name=private_queue, grace_s=0.5)
    queue.start()
    yield ctx, queue
    queue.stop()
    delete_row_keys(ctx.keys.redis, private_pg_url)
    store.close()


def _burst(queue_name: str) -> None:
    ctx = rq_context.require_context()
    worker = SolveWorker([queue_name], connection=ctx.keys.redis, serializer=JSONSerializer)
    worker.work(burst=True, with_scheduler=False)
    os._exit(0)


def run_burst_worker(queue_name: str, timeout_s: float = 40) -> None:
    process = multiprocessing.get_context("fork").Process(target=_burst, args=(queue_name,))
    process.start()
    process.join(timeout_s)
    if process.is_alive():
        process.kill()
        raise AssertionError(f"burst worker still running after {timeout_s} s")


def test_the_rq_job_timeout_above_the_time_limit_records_no_solution(private, monkeypatch):
    ctx, queue = private
    monkeypatch.setattr(ctx, "runner", runner(fakes.sleep_forever))
    record, _ = ctx.store.create(tiny_workload(time_limit_s=0.2))
    queue.submit(record.id)
    job = Job.fetch(job_id(record.id, 0), connection=ctx.keys.redis, serializer=JSONSerializer)
    assert job.timeout == 1  # ceil(time limit 0.2 s + grace 0.5 s): above the solver's own limit

    run_burst_worker(queue.keys.queue_name)

    done = ctx.store.get(record.id)
    assert done.outcome == "no_solution"
    assert "overran its time limit of 0.2 s" in done.error
    assert done.finished_at - done.started_at >= timedelta(seconds=0.9)


def test_a_solve_process_that_keeps_dying_is_retried_then_failed_with_the_reason(private, monkeypatch):
    ctx, queue = private
    monkeypatch.setattr(ctx, "runner", runner(fakes.crash))
    record, _ = ctx.store.create(tiny_workload())
    queue.submit(record.id)

    run_burst_worker(queue.keys.queue_name)

    done = ctx.store.get(record.id)
    assert done.status == JobState.failed
    assert done.attempts == MAX_ATTEMPTS
    assert f"interrupted {MAX_ATTEMPTS} times" in done.error and "solve process died (exit code 3)" in done.error


def test_the_sweep_requeues_rows_no_live_process_owns_and_leaves_live_claims_alone(private):
    ctx, _ = private
    store, keys = ctx.store, ctx.keys
    long_ago = datetime.now(UTC) - timedelta(seconds=10 * LEASE_S)

    def row(*, claim: bool, attempts: int = 0):
        record, _ = store.create(tiny_workload())
        with store.engine.begin() as c:
            c.execute(update(plans).where(plans.c.id == record.id).values(submitted_at=long_ago, attempts=attempts))
        if claim:
            store.claim(record.id)
            with store.engine.begin() as c:
                c.execute(update(plans).where(plans.c.id == record.id).values(started_at=long_ago))
        return record.id

    dead = row(claim=True)  # solving, no lease: its worker died
    exhausted = row(claim=True, attempts=MAX_ATTEMPTS - 1)  # the same, on its last claim
    live = row(claim=True)  # solving with a live lease
    keys.redis.set(keys.lease_key(live), Lease(1, "x-0", "w", 1, "h").dumps(), px=60_000)
    lost = row(claim=False)  # queued, but its RQ job was never enqueued (the API died in between)

    first = time.monotonic()
    assert sweep(ctx, clock=first) == 1  # the lost row; the unleased claims are only noted: one look proves no death
    assert store.get(dead).status == JobState.solving
    assert sweep(ctx, clock=first + LEASE_S) == 2  # still unleased a whole lease later: dead

    assert store.get(dead).status == JobState.queued
    assert store.get(exhausted).status == JobState.failed
    assert "interrupted 3 times" in store.get(exhausted).error and "lease" in store.get(exhausted).error
    assert store.get(live).status == JobState.solving
    assert store.get(lost).status == JobState.queued
    waiting = set(keys.queue.get_job_ids())
    assert {job_id(dead, 1), job_id(lost, 0)} <= waiting
    assert sweep(ctx, clock=first + 2 * LEASE_S) == 0  # what it enqueued is carried now


def _claimed_long_ago(store: PlanStore) -> PlanRecord:
    """A row claimed (attempt 1) so long ago that only its lease keeps the sweep from taking it for dead."""
    record, _ = store.create(tiny_workload())
    claimed = store.claim(record.id)
    with store.engine.begin() as c:
        c.execute(update(plans).where(plans.c.id == record.id)
                  .values(started_at=datetime.now(UTC) - timedelta(seconds=10 * LEASE_S)))
    return claimed


def test_the_sweep_does_not_take_a_live_claim_for_dead_when_its_lease_renewal_comes_late(private):
    """The race seen under load: a horse's renewal (or its first lease, just after the claim) comes after the lease
    expired, the sweep looks at that moment and requeued the live claim. One look without a lease proves nothing."""
    ctx, _ = private
    claimed = _claimed_long_ago(ctx.store)
    key = ctx.keys.lease_key(claimed.id)
    late = Lease(claimed.attempts, job_id(claimed.id, 0), "w", os.getpid(), "h")

    def still_its_claim() -> bool:
        row = ctx.store.get(claimed.id)
        return row.status == JobState.solving and row.attempts == 1

    first = time.monotonic()
    sweep(ctx, clock=first)  # no lease at this look: the live horse's renewal is late
    assert still_its_claim()
    hold(ctx.keys.redis, key, late, LEASE_S)  # and lands
    sweep(ctx, clock=first + LEASE_S)
    assert still_its_claim()
    ctx.keys.redis.delete(key)  # late once more: a new count starts, not the one of the first look
    sweep(ctx, clock=first + 2 * LEASE_S)
    assert still_its_claim()


class _HangingStore:
    """The store, but its reads hang until `answer` is set: a database that stopped answering without refusing."""

    def __init__(self, store: PlanStore):
        self.store = store
        self.asked = threading.Event()
        self.answer = threading.Event()

    def get(self, plan_id: str) -> PlanRecord | None:
        self.asked.set()
        self.answer.wait()
        return self.store.get(plan_id)


def test_a_solving_horse_keeps_renewing_its_lease_while_the_database_hangs(private):
    """The lease renewal waited for the claim check, a database read: a database that hung for 2/3 of a lease let a
    live claim's lease expire. The renewal now waits on nothing but Redis."""
    ctx, _ = private
    claimed = _claimed_long_ago(ctx.store)
    key = ctx.keys.lease_key(claimed.id)
    lease = Lease(claimed.attempts, job_id(claimed.id, 0), "w", os.getpid(), "h")
    hanging = _HangingStore(ctx.store)
    holder = LeaseHolder(ctx.keys.redis, key, lease, LEASE_S, cast(PlanStore, hanging), claimed.id)
    holder.start()
    try:
        assert hanging.asked.wait(10 * LEASE_S)  # the claim check waits for the database
        for _ in range(3):  # three leases long
            time.sleep(LEASE_S)
            assert Lease.loads(ctx.keys.redis.get(key)) == lease
    finally:
        holder.release()
        hanging.answer.set()
    assert ctx.keys.redis.get(key) is None


def test_submit_beyond_the_bound_raises_queue_full(private):
    ctx, _ = private
    bounded = RQQueue(ctx.store, ctx.keys.url, runner=RUNNER, queue_name=ctx.keys.queue_name, queue_size=1)
    first, _ = ctx.store.create(tiny_workload())
    bounded.submit(first.id)
    second, _ = ctx.store.create(tiny_workload())
    with pytest.raises(QueueFull) as caught:
        bounded.submit(second.id)
    assert caught.value.retry_after_s >= 1


def test_a_worker_pools_housekeeping_deletes_the_results_past_their_time_to_live(private, monkeypatch, tmp_path):
    from optsched.infra.availability import Availability
    from optsched.infra.rq.sweep import housekeeping

    ctx, _ = private
    monkeypatch.setattr(ctx, "result_ttl_s", 3_600.0)
    monkeypatch.setattr(ctx, "spool_dir", tmp_path / "spool")
    rows = {}
    for age_s in (7_200, 60):
        record, _ = ctx.store.create(tiny_workload())
        claimed = ctx.store.claim(record.id)
        ctx.store.finish(record.id, claimed.attempts, JobState.cancelled, error="stopped")
        with ctx.store.engine.begin() as c:
            c.execute(update(plans).where(plans.c.id == record.id).values(
                finished_at=datetime.now(UTC) - timedelta(seconds=age_s)))
        rows[age_s] = record.id
    housekeeping(ctx, Availability("Redis"), Availability("the database"))  # what a pool runs every lease / 3
    assert ctx.store.get(rows[7_200]) is None  # ended two hours ago, kept one: gone
    assert ctx.store.get(rows[60]) is not None
