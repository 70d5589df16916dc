"""Recovery of rows no live process owns, run by every worker pool every `lease_s / 3` (`housekeeping`): write the
answers spooled on this machine, hold their leases, then `sweep` the store.

- the horse dies (out of memory, killed) while its worker lives: the worker (RQ's work-horse-killed handler) requeues
  the row at once with `recover` (or records `no_solution` when it had overrun its time limit);
- the whole worker dies (machine lost, SIGKILL): its lease expires, and the sweep requeues the `solving` row once
  its lease has been missing for a whole lease more; it re-enqueues `queued` rows that no RQ job carries (an API
  that died between storing and enqueueing), and rows whose RQ job is stranded in an in-flight stage (dequeued
  into RQ's intermediate queue, or started, by a worker that is gone) for longer than a lease. RQ's own
  abandoned-job handling (the started-job registry's TTL, about a minute) would notice later and only moves the
  RQ job to its failed registry;
- at most MAX_ATTEMPTS claims per row, then `failed` with the reason.

A live claim is never taken for dead on one look: the horse renews its lease from a thread that waits on nothing
but Redis (optsched.infra.rq.lease), and the sweep requires the lease to be missing at two looks a whole lease
apart, timed by its own monotonic clock (the claim's `started_at`, written by another machine's clock, only
narrows which rows it looks at).
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime, timedelta

from redis import Redis

from optsched.infra.availability import Availability
from optsched.infra.retention import expire
from optsched.infra.rq.context import WorkerContext
from optsched.infra.rq.keys import QUEUE_OUTAGES, job_id, plan_id_of
from optsched.infra.rq.spool import Spool, hold_spooled
from optsched.infra.store import DATABASE_OUTAGES, MAX_ATTEMPTS, JobState, PlanRecord

log = logging.getLogger(__name__)


def recover(ctx: WorkerContext, record: PlanRecord, reason: str) -> None:
    """A claim whose solve stopped: requeue it for another worker, or fail it after MAX_ATTEMPTS claims."""
    if record.attempts >= MAX_ATTEMPTS:
        error = f"the solve was interrupted {record.attempts} times, last because {reason}; not retried"
        if ctx.store.finish(record.id, record.attempts, JobState.failed, error=error):
            log.error("plan %s failed: %s", record.id, error)
        return
    if ctx.store.requeue(record.id, record.attempts):
        try:
            ctx.keys.enqueue(record, ctx.runner.budget_s(record), ctx.grace_s, at_front=True)
        except QUEUE_OUTAGES:
            log.warning("plan %s requeued in the store (claim %d): %s; Redis does not answer, so the sweep enqueues "
                        "it", record.id, record.attempts, reason)
            return
        log.warning("plan %s requeued (claim %d): %s", record.id, record.attempts, reason)


def redis_uptime_s(redis: Redis) -> float:
    """Seconds since the Redis server started (a restart may have lost or expired the leases)."""
    return float(redis.info("server")["uptime_in_seconds"])


def sweep(ctx: WorkerContext, *, clock: float | None = None) -> int:
    """Requeue rows no live process owns; how many:
    - `solving` without a lease at two looks a whole lease apart (one look is not enough: a live horse's renewal
      may come late, and the first lease follows the claim by moments), once Redis has been up for a whole lease
      (after a restart, live horses renew their leases first);
    - `queued` with no RQ job waiting for a worker and none taken by one, or with its job taken off the queue (RQ's
      intermediate queue, or started) by a worker that is gone: still there, its row still queued, a lease later.
    A queued row is left a lease to be enqueued by its API process, or less after a Redis restart: a row stored
    before Redis started lost whatever job it had (an API enqueueing it meanwhile makes a second job for the same
    claim, which finds the row claimed and skips).
    `clock` is the time of this look on the monotonic clock the looks are timed by (default: now).
    """
    now = datetime.now(UTC)
    clock = time.monotonic() if clock is None else clock
    uptime_s = redis_uptime_s(ctx.keys.redis)
    settle = timedelta(seconds=min(ctx.lease_s, uptime_s))
    adopted = 0
    unleased: set[str] = set()
    if uptime_s >= ctx.lease_s:
        for record in ctx.store.stale_solving(now - settle):
            lease = ctx.keys.lease(record.id)
            if lease is not None and lease.attempt == record.attempts:
                continue
            claim = job_id(record.id, record.attempts)
            unleased.add(claim)
            if ctx.unleased.seen_for(claim, clock) < ctx.lease_s:
                continue
            recover(ctx, record, f"its worker stopped renewing its lease (no word for {2 * ctx.lease_s:g} s)")
            adopted += 1
    ctx.unleased.keep_only(unleased)
    waiting = {plan_id_of(i) for i in ctx.keys.queue.get_job_ids()}
    in_flight = ctx.keys.in_flight()
    for plan_id in ctx.store.ids_with_state(JobState.queued):
        if plan_id in waiting:
            continue
        taken = in_flight.get(plan_id)
        if taken is not None and ctx.in_flight.seen_for(taken[0], clock) < ctx.lease_s:
            continue  # a worker is taking it (or was, moments ago)
        queued = ctx.store.get(plan_id)
        if queued is None or queued.status != JobState.queued or queued.submitted_at > now - settle:
            continue
        if taken is None:
            log.warning("plan %s was queued in the store but not in RQ; enqueued", plan_id)
        else:
            rq_job, stage = taken
            if stage == "intermediate":  # (RQ documents no API for its intermediate queue: see Keys.in_flight)
                ctx.keys.queue.intermediate_queue.remove(rq_job)
            log.warning("plan %s: its RQ job %s was taken off the queue (%s) %.0f s ago by a worker that never ran "
                        "it; enqueued again", plan_id, rq_job, stage, ctx.in_flight.seen_for(rq_job, clock))
            ctx.in_flight.forget(rq_job)
        ctx.keys.enqueue(queued, ctx.runner.budget_s(queued), ctx.grace_s)
        adopted += 1
    ctx.in_flight.keep_only({rq_job for rq_job, _ in in_flight.values()})
    return adopted


def housekeeping(ctx: WorkerContext, redis_state: Availability, database: Availability) -> None:
    """A worker pool's periodic chores, each waiting out an outage of its dependency: write the answers spooled on
    this machine to the store, hold the leases of those the database has not taken yet, `sweep`, then delete the
    results past their time-to-live (optsched.infra.retention)."""
    spool = Spool(ctx.spool_dir)
    try:
        spool.replay(ctx.store)
    except DATABASE_OUTAGES as exc:
        database.failed(exc, "writing spooled answers")
    try:
        hold_spooled(ctx, spool)
        sweep(ctx)
        expire(ctx.store, ctx.result_ttl_s)
    except DATABASE_OUTAGES as exc:
        database.failed(exc, "sweep")
        return
    except QUEUE_OUTAGES as exc:
        redis_state.failed(exc, "sweep")
        return
    except Exception:  # noqa: BLE001 - the pool must outlive any one bad sweep
        log.exception("sweep failed; trying again in %g s", ctx.lease_s / 3)
        return
    redis_state.ok()
    database.ok()
