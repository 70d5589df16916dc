"""The RQ job a work horse runs: `solve_job` claims the row, holds its lease, runs the service's `Runner` (the same
function the embedded process pool runs) and writes the answer to the store in one conditional transaction.

Time limits: the RQ job timeout is the row's solve budget plus the grace period (above the solver's own limit,
which stops HiGHS first); when RQ's alarm fires (`OverrunPenalty`), the row is recorded `no_solution`, as the
process pool does.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

from rq.job import get_current_job
from rq.timeouts import JobTimeoutException, UnixSignalDeathPenalty

from optsched.infra.availability import Availability, retry_while_away
from optsched.infra.queue import SolveTask, overrun_error, set_incumbent_sink
from optsched.infra.rq.context import WorkerContext, require_context
from optsched.infra.rq.keys import job_id
from optsched.infra.rq.lease import Lease, LeaseHolder
from optsched.infra.rq.pricing import RQPricing
from optsched.infra.rq.spool import OVERRUN, Answer, deliver, spool_lease
from optsched.infra.store import DATABASE_OUTAGES, PlanRecord
from optsched.solve.columns.fanout import set_pricing_fan_out

log = logging.getLogger(__name__)

# Set in the horse when RQ's job timeout fired, so that `solve_job` records the overrun it is.
_overran = threading.Event()


def _restart_job_timeout() -> None:
    """Restart RQ's job timeout (the alarm of its death penalty) in a horse whose claim waited for the database:
    the solve's time limit counts from its claim."""
    job = get_current_job()
    if job is not None and job.timeout and job.timeout > 0 and threading.current_thread() is threading.main_thread():
        signal.alarm(int(job.timeout))


def _stop_job_timeout() -> None:
    """The solve is over: writing its answer may wait for the database past RQ's job timeout (bounded by
    `result_retry_s`), and must not be cut short by it."""
    if threading.current_thread() is threading.main_thread():
        signal.alarm(0)


def solve_job(plan_id: str) -> str:
    """The RQ job (in a work horse): claim the row, solve it, write the result; the final state, or why not."""
    ctx = require_context()
    _overran.clear()
    database = Availability("the database", log)
    asked = time.monotonic()
    try:
        record = retry_while_away(lambda: ctx.store.claim(plan_id), DATABASE_OUTAGES, database,
                                  f"claiming plan {plan_id}", for_s=ctx.result_retry_s)
    except DATABASE_OUTAGES as exc:
        log.warning("plan %s: not claimed, the database did not answer for %g s (%s); it stays queued and the sweep "
                    "enqueues it again", plan_id, ctx.result_retry_s, type(exc).__name__)
        return "skipped: the database did not answer; the row stays queued"
    if record is None:
        return "skipped: the row is no longer queued (cancelled, or another job claimed it)"
    job = get_current_job()
    rq_job = job.id if job is not None else job_id(plan_id, record.attempts - 1)
    worker = (job.worker_name or "") if job is not None else ""
    # First thing after the claim: until the lease is written, only its age protects the claim from the sweep.
    lease = Lease(record.attempts, rq_job, worker, os.getpid(), socket.gethostname())
    holder = LeaseHolder(ctx.keys.redis, ctx.keys.lease_key(plan_id), lease, ctx.lease_s, ctx.store, plan_id)
    holder.start()
    if time.monotonic() - asked > 1.0:
        _restart_job_timeout()
    log.info("plan %s: solving claim %d", plan_id, record.attempts)
    spooled = None
    try:
        try:
            set_incumbent_sink(lambda document: _record_incumbent(ctx, record, document, database))
            set_pricing_fan_out(RQPricing(ctx.keys) if ctx.pricing_fan_out else None)
            try:
                outcome, payload = ctx.runner.solve(SolveTask.of(record, ctx.solver_threads))
            finally:
                set_incumbent_sink(None)
                set_pricing_fan_out(None)
        except JobTimeoutException:
            outcome, payload = "error", "timed out"  # recorded below as the overrun it is
        _stop_job_timeout()
        holder.solved.set()
        if _overran.is_set():
            outcome, payload = OVERRUN, overrun_error(ctx.runner.budget_s(record), ctx.grace_s)
        answer = Answer(plan_id, record.attempts, outcome, payload)
        written = deliver(ctx, answer, database)
        if isinstance(written, Path):
            spooled = answer
            return f"spooled: {written}"
        return written.value if written is not None else "skipped: the claim was no longer current"
    finally:
        holder.release(spool_lease(spooled) if spooled is not None else None)


def _record_incumbent(ctx: WorkerContext, record: PlanRecord, document: dict[str, Any], database: Availability) -> None:
    """Keep a running solve's best plan on its row; while the database does not answer, go on without it."""
    try:
        ctx.store.record_incumbent(record.id, record.attempts, document)
    except DATABASE_OUTAGES as exc:
        database.failed(exc, f"recording an incumbent of plan {record.id}")
        return
    database.ok()


class OverrunPenalty(UnixSignalDeathPenalty):
    """RQ's job timeout, noting that it fired so that `solve_job` records `no_solution` (the planner catches it)."""

    def handle_death_penalty(self, signum: int, frame: FrameType | None) -> None:
        _overran.set()
        super().handle_death_penalty(signum, frame)
