"""Solves on RQ workers over Redis: the `SolveQueue` for many machines, chosen by OPTSCHED_QUEUE_URL.

`RQQueue` is what the API (and `optsched batch`) submit to: one RQ job per claim of a stored row, whose only
argument is the row's id; the row itself stays in the shared store (PostgreSQL). `optsched worker` runs
`run_workers`: an RQ `WorkerPool` of `SolveWorker`s. RQ forks a fresh work horse per job (so HiGHS's memory
growth dies with it); the job function `solve_job` claims the row, runs the service's `Runner` (the same
function the embedded process pool runs) and writes the result to the store in one conditional transaction.

While a horse solves, it holds a **lease** in Redis (`<prefix>:lease:<id>`: claim number, job id, worker, pid,
renewed every `lease_s / 3`). Recovery, at most MAX_ATTEMPTS claims per row, then `failed` with the reason:

- the horse dies (out of memory, killed) while its worker lives: the worker's `handle_work_horse_killed` requeues
  the row at once (or records `no_solution` when it had overrun its time limit);
- the whole worker dies (machine lost, SIGKILL): its lease expires; every worker pool sweeps the store every
  `lease_s / 3` and requeues `solving` rows without a live lease, and re-enqueues `queued` rows that no RQ job
  carries (an API that died between storing and enqueueing). RQ's own abandoned-job handling (the started-job
  registry's TTL, about a minute) would notice later and only moves the RQ job to its failed registry;
- a horse whose worker is gone, or whose row is no longer its claim (cancelled), exits by itself.

Time limits: the RQ job timeout is the row's solve budget plus the grace period (above the solver's own limit,
which stops HiGHS first); when RQ's alarm fires, the row is recorded `no_solution`, as the process pool does.
Cancellation (`DELETE`) marks the row `cancelled` in the store, then sends RQ's stop-job command to the worker
that holds the lease, wherever it runs; that worker kills its horse.

Jobs are serialised as JSON (never pickle), so a client that can write to Redis cannot make workers run code.
"""

from __future__ import annotations

import json
import logging
import math
import os
import socket
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from multiprocessing import get_context
from urllib.parse import urlsplit, urlunsplit

from redis import Redis
from redis.exceptions import RedisError
from rq import Queue, Worker
from rq.command import send_stop_job_command
from rq.exceptions import InvalidJobOperation, NoSuchJobError
from rq.job import Job, get_current_job
from rq.serializers import JSONSerializer
from rq.timeouts import JobTimeoutException, UnixSignalDeathPenalty
from rq.worker_pool import WorkerPool

from optsched.infra.pool import QueueFull, Runner, SolveQueue, SolveTask, record_outcome
from optsched.infra.store import MAX_ATTEMPTS, PlanRecord, PlanState, PlanStore

log = logging.getLogger(__name__)

DEFAULT_QUEUE_NAME = "optsched"
# Seconds a solving row's lease lasts without renewal: how long a dead worker's row waits before it is requeued.
DEFAULT_LEASE_S = 15.0
DEFAULT_GRACE_S = 5.0
# How long RQ keeps a finished or failed job's record (the store keeps the result; these are for diagnosis).
RESULT_TTL_S = 600
FAILURE_TTL_S = 86_400
# Seconds one waiting job is assumed to take, for the Retry-After of a full queue.
ASSUMED_SOLVE_S = 5.0
# A horse checks this often whether its worker is still its parent.
ORPHAN_POLL_S = 0.5
# Exit codes of a horse that stops itself.
EXIT_ORPHANED, EXIT_CLAIM_LOST = 70, 71
JOB_FUNCTION = "optsched.infra.rq.solve_job"


def job_id(plan_id: str, attempts: int) -> str:
    """RQ job id of the next claim of a row that has been claimed `attempts` times."""
    return f"{plan_id}-{attempts}"


def plan_id_of(rq_job_id: str) -> str:
    return rq_job_id.rsplit("-", 1)[0]


def redacted(url: str) -> str:
    """The URL without its password, for logs and summaries."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


@dataclass(frozen=True)
class Lease:
    """Who holds a solving row: its claim number, RQ job, worker name, horse pid and host."""

    attempt: int
    job: str
    worker: str
    pid: int
    host: str

    def dumps(self) -> str:
        return json.dumps(self.__dict__)

    @classmethod
    def loads(cls, raw: bytes | str | None) -> Lease | None:
        if raw is None:
            return None
        try:
            return cls(**json.loads(raw))
        except (TypeError, ValueError):
            return None


class _Keys:
    """Redis connection, RQ queue and lease keys of one queue name, shared by the API side and the workers."""

    def __init__(self, url: str, queue_name: str):
        self.url = url
        self.queue_name = queue_name
        self.redis = Redis.from_url(url, socket_connect_timeout=5, socket_keepalive=True, health_check_interval=30)
        self.queue = Queue(queue_name, connection=self.redis, serializer=JSONSerializer)

    def lease_key(self, plan_id: str) -> str:
        return f"optsched:{self.queue_name}:lease:{plan_id}"

    def lease(self, plan_id: str) -> Lease | None:
        return Lease.loads(self.redis.get(self.lease_key(plan_id)))

    def enqueue(self, record: PlanRecord, budget_s: float, grace_s: float, *, at_front: bool = False) -> Job:
        """One RQ job for the next claim of `record`; its timeout is the solve budget plus the grace period."""
        timeout = math.ceil(budget_s + grace_s)
        return self.queue.enqueue_call(
            JOB_FUNCTION,
            args=(record.id,),
            job_id=job_id(record.id, record.attempts),
            timeout=max(1, timeout),
            result_ttl=RESULT_TTL_S,
            failure_ttl=FAILURE_TTL_S,
            description=f"solve {record.kind} {record.id}",
            at_front=at_front,
        )

    def carried_ids(self) -> set[str]:
        """Row ids that an RQ job waits for or runs (queued, being dequeued, started)."""
        ids = [*self.queue.get_job_ids(), *self.queue.intermediate_queue.get_job_ids()]
        ids += self.queue.started_job_registry.get_job_ids(cleanup=False)
        return {plan_id_of(i) for i in ids}


class RQQueue(SolveQueue):
    """Submit to RQ workers (`optsched worker`, on any machine); the store must be shared (PostgreSQL)."""

    def __init__(
        self,
        store: PlanStore,
        url: str,
        *,
        runner: Runner,
        queue_name: str = DEFAULT_QUEUE_NAME,
        queue_size: int | None = None,
        grace_s: float = DEFAULT_GRACE_S,
    ):
        super().__init__(store, runner)
        self.keys = _Keys(url, queue_name)
        self.queue_size = queue_size
        self.grace_s = grace_s
        self._running = False

    def start(self) -> None:
        """Nothing runs here: workers solve, and their pools requeue what a dead process left (see `sweep`)."""
        self._running = True

    def stop(self) -> None:
        self._running = False
        self.keys.redis.close()

    def submit(self, plan_id: str) -> None:
        if self.queue_size is not None:
            waiting = self.keys.queue.count
            if waiting >= self.queue_size:
                raise QueueFull(self.queue_size, self._retry_after_s(waiting))
        record = self.store.get(plan_id)
        if record is None or record.status != PlanState.queued:
            return
        self.keys.enqueue(record, self.runner.budget_s(record), self.grace_s)

    def cancel(self, plan_id: str) -> PlanRecord | None:
        record, changed = self.store.cancel(plan_id)
        if changed and record is not None:
            self._stop_job(record)
        return record

    def depth(self) -> int:
        return self.keys.queue.count

    def healthy(self) -> bool:
        if not self._running:
            return False
        try:
            return bool(self.keys.redis.ping())
        except RedisError:
            return False

    def worker_count(self) -> int:
        return Worker.count(connection=self.keys.redis, queue=self.keys.queue)

    def _stop_job(self, record: PlanRecord) -> None:
        """Stop the RQ job of a row just cancelled: drop it from the queue, or tell its worker to kill it."""
        lease = self.keys.lease(record.id)
        try:
            if lease is not None:
                send_stop_job_command(self.keys.redis, lease.job, serializer=JSONSerializer)
                self.keys.redis.delete(self.keys.lease_key(record.id))
                log.info("plan %s cancelled; stop-job sent to worker %s (pid %s on %s)", record.id, lease.worker,
                         lease.pid, lease.host)
            else:
                Job.fetch(job_id(record.id, record.attempts), connection=self.keys.redis,
                          serializer=JSONSerializer).cancel()
        except (NoSuchJobError, InvalidJobOperation):
            pass  # already gone: its claim fails on the cancelled row, or its horse sees the row is no longer its own

    def _retry_after_s(self, waiting: int) -> int:
        """A guess at when a slot frees up: a few seconds per waiting job, spread over the live workers."""
        try:
            workers = max(1, self.worker_count())
        except RedisError:
            workers = 1
        return max(1, min(300, math.ceil(waiting * ASSUMED_SOLVE_S / workers)))


# -- the worker side -----------------------------------------------------------------------------------------


@dataclass
class WorkerContext:
    """What every worker process (pool, worker, horse) of `optsched worker` shares; inherited through fork."""

    store: PlanStore
    keys: _Keys
    runner: Runner
    grace_s: float = DEFAULT_GRACE_S
    lease_s: float = DEFAULT_LEASE_S
    solver_threads: int | None = 1


_context: WorkerContext | None = None
_overran = threading.Event()


def configure(
    store: PlanStore,
    url: str,
    *,
    runner: Runner,
    queue_name: str = DEFAULT_QUEUE_NAME,
    grace_s: float = DEFAULT_GRACE_S,
    lease_s: float = DEFAULT_LEASE_S,
    solver_threads: int | None = 1,
) -> WorkerContext:
    """Set the context solve jobs run with in this process and the processes it forks."""
    global _context
    _context = WorkerContext(store, _Keys(url, queue_name), runner, grace_s, lease_s, solver_threads)
    return _context


def _after_fork_in_child() -> None:
    """A forked worker or horse must not share the parent's database connections: it opens its own."""
    if _context is not None:
        _context.store.engine.dispose(close=False)


os.register_at_fork(after_in_child=_after_fork_in_child)


def _require_context() -> WorkerContext:
    if _context is None:
        raise RuntimeError("optsched solve jobs run in `optsched worker` (or after optsched.rq_queue.configure)")
    return _context


def _overrun_error(limit_s: float, grace_s: float) -> str:
    return (
        f"the solve overran its time limit of {limit_s:g} s by more than the {grace_s:g} s grace period "
        "and was stopped"
    )


def solve_job(plan_id: str) -> str:
    """The RQ job (in a work horse): claim the row, solve it, write the result; the final state, or why not."""
    ctx = _require_context()
    _overran.clear()
    record = ctx.store.claim(plan_id)
    if record is None:
        return "skipped: the row is no longer queued (cancelled, or another job claimed it)"
    job = get_current_job()
    holder = _LeaseHolder(ctx, record, job.id if job is not None else job_id(plan_id, record.attempts - 1),
                          job.worker_name if job is not None else "")
    holder.start()
    try:
        try:
            outcome, payload = ctx.runner.solve(SolveTask.of(record, ctx.solver_threads))
        except JobTimeoutException:
            outcome, payload = "error", "timed out"  # recorded below as the overrun it is
        if _overran.is_set():
            ctx.store.finish(plan_id, record.attempts, PlanState.no_solution,
                             error=_overrun_error(ctx.runner.budget_s(record), ctx.grace_s))
            return PlanState.no_solution.value
        state = record_outcome(ctx.store, plan_id, record.attempts, outcome, payload)
        return state.value if state is not None else "skipped: the claim was no longer current"
    finally:
        holder.release()


class _LeaseHolder(threading.Thread):
    """In the horse: renews the lease, and exits the horse when its worker is gone or the row is not its claim."""

    def __init__(self, ctx: WorkerContext, record: PlanRecord, rq_job: str, worker: str):
        super().__init__(name="optsched-lease", daemon=True)
        self.ctx, self.plan_id, self.attempt = ctx, record.id, record.attempts
        self.key = ctx.keys.lease_key(record.id)
        self.lease = Lease(record.attempts, rq_job, worker, os.getpid(), socket.gethostname())
        self.parent = os.getppid()
        self.done = threading.Event()
        self._renew()

    def _renew(self) -> None:
        self.ctx.keys.redis.set(self.key, self.lease.dumps(), px=int(self.ctx.lease_s * 1000))

    def run(self) -> None:
        renew_every = self.ctx.lease_s / 3
        next_renewal = time.monotonic() + renew_every
        while not self.done.wait(ORPHAN_POLL_S):
            if os.getppid() != self.parent:
                log.error("plan %s: this solve's worker is gone; stopping (the row is requeued)", self.plan_id)
                os._exit(EXIT_ORPHANED)
            if time.monotonic() < next_renewal:
                continue
            next_renewal = time.monotonic() + renew_every
            try:
                row = self.ctx.store.get(self.plan_id)
                if row is None or row.status != PlanState.solving or row.attempts != self.attempt:
                    log.warning("plan %s is no longer this solve's claim (%s); stopping", self.plan_id,
                                row.status if row else "deleted")
                    self.ctx.keys.redis.delete(self.key)
                    os._exit(EXIT_CLAIM_LOST)
                self._renew()
            except Exception:  # noqa: BLE001 - a store or Redis hiccup: try again at the next renewal
                log.exception("plan %s: cannot renew the lease", self.plan_id)

    def release(self) -> None:
        self.done.set()
        try:
            self.ctx.keys.redis.delete(self.key)
        except RedisError:
            log.warning("plan %s: cannot delete the lease; it expires in %g s", self.plan_id, self.ctx.lease_s)


class _OverrunPenalty(UnixSignalDeathPenalty):
    """RQ's job timeout, noting that it fired so that `solve_job` records `no_solution` (the planner catches it)."""

    def handle_death_penalty(self, signum, frame):
        _overran.set()
        super().handle_death_penalty(signum, frame)


class SolveWorker(Worker):
    """An RQ worker that requeues (or fails, or records as overrun) the row of a horse that died."""

    death_penalty_class = _OverrunPenalty

    def handle_work_horse_killed(self, job: Job, retpid, ret_val, rusage) -> None:
        super().handle_work_horse_killed(job, retpid, ret_val, rusage)
        ctx = _require_context()
        plan_id = plan_id_of(job.id)
        lease = ctx.keys.lease(plan_id)
        if lease is None or lease.job != job.id:
            return  # it never claimed, or stopped itself after losing its claim: nothing of ours to recover
        ctx.keys.redis.delete(ctx.keys.lease_key(plan_id))
        record = ctx.store.get(plan_id)
        if record is None or record.status != PlanState.solving or record.attempts != lease.attempt:
            return
        elapsed = (job.ended_at - job.started_at).total_seconds() if job.started_at and job.ended_at else 0.0
        if job.timeout and job.timeout > 0 and elapsed >= job.timeout:
            ctx.store.finish(plan_id, record.attempts, PlanState.no_solution,
                             error=_overrun_error(ctx.runner.budget_s(record), ctx.grace_s))
            return
        recover(ctx, record, f"its solve process died ({_exit_note(ret_val)}) on worker {self.name}")


def _exit_note(status: int | None) -> str:
    if status is None:
        return "exit status unknown"
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit code {os.WEXITSTATUS(status)}"


def recover(ctx: WorkerContext, record: PlanRecord, reason: str) -> None:
    """A claim whose solve stopped: requeue it for another worker, or fail it after MAX_ATTEMPTS claims."""
    if record.attempts >= MAX_ATTEMPTS:
        error = f"the solve was interrupted {record.attempts} times, last because {reason}; not retried"
        if ctx.store.finish(record.id, record.attempts, PlanState.failed, error=error):
            log.error("plan %s failed: %s", record.id, error)
        return
    if ctx.store.requeue(record.id, record.attempts):
        ctx.keys.enqueue(record, ctx.runner.budget_s(record), ctx.grace_s, at_front=True)
        log.warning("plan %s requeued (claim %d): %s", record.id, record.attempts, reason)


def sweep(ctx: WorkerContext) -> int:
    """Requeue rows no live process owns: `solving` without a lease, `queued` without an RQ job; how many."""
    now = datetime.now(UTC)
    settle = timedelta(seconds=ctx.lease_s)
    adopted = 0
    for record in ctx.store.stale_solving(now - settle):
        lease = ctx.keys.lease(record.id)
        if lease is not None and lease.attempt == record.attempts:
            continue
        recover(ctx, record, f"its worker stopped renewing its lease (no word for {ctx.lease_s:g} s)")
        adopted += 1
    carried = ctx.keys.carried_ids()
    for plan_id in ctx.store.ids_with_state(PlanState.queued):
        if plan_id in carried:
            continue
        record = ctx.store.get(plan_id)
        if record is None or record.status != PlanState.queued or record.submitted_at > now - settle:
            continue
        ctx.keys.enqueue(record, ctx.runner.budget_s(record), ctx.grace_s)
        log.warning("plan %s was queued in the store but not in RQ; enqueued", plan_id)
        adopted += 1
    return adopted


_fork = get_context("fork")


class SolveWorkerPool(WorkerPool):
    """RQ's worker pool (respawns dead workers), running `SolveWorker`s, plus the periodic `sweep`."""

    def __init__(self, ctx: WorkerContext, num_workers: int):
        super().__init__([ctx.keys.queue_name], connection=ctx.keys.redis, num_workers=num_workers,
                         worker_class=SolveWorker, serializer=JSONSerializer)
        self.ctx = ctx
        self._next_sweep = 0.0

    def get_worker_process(self, name: str, burst: bool, _sleep: float = 0, logging_level: str = "INFO"):
        return _fork.Process(target=_run_worker, args=(name, burst, logging_level), name=f"optsched-worker {name}")

    def check_workers(self, respawn: bool = True) -> None:
        super().check_workers(respawn)
        if time.monotonic() >= self._next_sweep:
            self._next_sweep = time.monotonic() + self.ctx.lease_s / 3
            try:
                sweep(self.ctx)
            except Exception:  # noqa: BLE001 - the pool must outlive a store or Redis hiccup
                log.exception("sweep failed; trying again in %g s", self.ctx.lease_s / 3)


def _run_worker(name: str, burst: bool, logging_level: str) -> None:
    """One RQ worker process of the pool; it exits (killing its horse) if the pool process disappears."""
    ctx = _require_context()
    connection = Redis.from_url(ctx.keys.url, socket_connect_timeout=5, socket_keepalive=True)
    queue = Queue(ctx.keys.queue_name, connection=connection, serializer=JSONSerializer)
    worker = SolveWorker([queue], name=f"{socket.gethostname()}.{name[:12]}", connection=connection,
                         serializer=JSONSerializer)
    pool_pid = os.getppid()

    def exit_when_orphaned() -> None:
        while os.getppid() == pool_pid:
            time.sleep(ORPHAN_POLL_S)
        if worker.horse_pid:
            worker.kill_horse()
        os._exit(EXIT_ORPHANED)

    threading.Thread(target=exit_when_orphaned, daemon=True).start()
    worker.work(burst=burst, logging_level=logging_level, with_scheduler=False)


def run_workers(ctx: WorkerContext, concurrency: int, *, burst: bool = False) -> None:
    """Run `concurrency` RQ workers until interrupted (SIGINT/SIGTERM: each finishes its solve first)."""
    # The pool process imported the planners with ctx.runner (the service's kinds): each forked horse starts solving at once.
    sweep(ctx)
    SolveWorkerPool(ctx, concurrency).start(burst=burst, logging_level="INFO")
