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

Outages of Redis or the database are waited out, not crashed on (each process logs one line when a dependency
stops answering and one when it is back):
- a finished solve keeps its answer until the store takes it: the horse retries for `result_retry_s`, then writes
  it to a spool directory on this machine (`Spool`), which the worker pool replays until the database takes it
  (and at its next start), holding the row's lease meanwhile so that no sweep solves it again;
- a worker waits for Redis with backoff instead of exiting (the pool backs off respawning workers that die young);
  it registers again when Redis lost its registration (a restart without persistence), and an idle worker told to
  stop exits within STOP_GRACE_S whatever it waits on;
- the sweep requeues unleased `solving` rows only once Redis has been up for a whole lease (live horses renew
  their leases first), and re-enqueues rows whose RQ job is stranded in an in-flight stage (dequeued into RQ's
  intermediate queue, or started, by a worker that is gone) for longer than a lease.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from multiprocessing import get_context
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from redis import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError, WatchError
from redis.exceptions import TimeoutError as RedisTimeoutError
from rq import Queue, Worker, worker_registration
from rq.command import send_stop_job_command
from rq.exceptions import InvalidJobOperation, NoSuchJobError
from rq.job import Job, get_current_job
from rq.serializers import JSONSerializer
from rq.timeouts import JobTimeoutException, UnixSignalDeathPenalty
from rq.worker_pool import WorkerPool

from optsched.infra.availability import BACKOFF_MAX_S, Availability, backoff_s
from optsched.infra.queue import QueueFull, Runner, SolveTask, poll_until_final, record_outcome, set_incumbent_sink
from optsched.infra.store import DATABASE_OUTAGES, MAX_ATTEMPTS, PlanRecord, PlanState, PlanStore

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
# What Redis raises when it does not answer (down, restarting, loading its data, cut off): an outage, not a bug.
QUEUE_OUTAGES: tuple[type[Exception], ...] = (RedisConnectionError, RedisTimeoutError)
# A horse retries writing a finished solve's answer this long while the database does not answer, then spools it
# (kept below RQ's 60 s of slack past the job timeout, after which the worker kills its horse).
DEFAULT_RESULT_RETRY_S = 30.0
MAX_RESULT_RETRY_S = 50.0
DEFAULT_SPOOL_DIR = "var/spool"
# An idle worker told to stop exits within this many seconds, whatever it waits on (a long poll, a dead Redis).
STOP_GRACE_S = 3.0
# Worker TTL: RQ's long poll lasts this minus 15 s, so an idle worker looks at Redis (and its own registration)
# every 5 s; a worker that vanished drops out of the worker count 60 s after its last heartbeat.
WORKER_TTL_S = 20
JOB_MONITORING_S = 10
# A worker process that dies sooner than this after its start is respawned with backoff (up to the cap).
YOUNG_WORKER_S, MAX_RESPAWN_DELAY_S = 10.0, 30.0
_T = TypeVar("_T")
# Attempts at the bounded enqueue's transaction before a busy queue answers 'full' (each lost one means another
# submit or a worker changed the queue meanwhile).
ENQUEUE_TRIES = 50


def job_id(plan_id: str, attempts: int) -> str:
    """RQ job id of the next claim of a row that has been claimed `attempts` times."""
    return f"{plan_id}-{attempts}"


def plan_id_of(rq_job_id: str) -> str:
    return rq_job_id.rsplit("-", 1)[0]


def claim_of(rq_job_id: str) -> int:
    """The claim number (the row's `attempts` once claimed) that the RQ job `rq_job_id` makes when it runs."""
    return int(rq_job_id.rsplit("-", 1)[1]) + 1


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
        # Timeouts: a Redis that stops answering mid-command is an outage within seconds, never a hang.
        self.redis = Redis.from_url(url, socket_connect_timeout=5, socket_timeout=10, socket_keepalive=True,
                                    health_check_interval=30)
        self.queue = Queue(queue_name, connection=self.redis, serializer=JSONSerializer)

    def lease_key(self, plan_id: str) -> str:
        return f"optsched:{self.queue_name}:lease:{plan_id}"

    def lease(self, plan_id: str) -> Lease | None:
        return Lease.loads(self.redis.get(self.lease_key(plan_id)))

    def enqueue(
        self, record: PlanRecord, budget_s: float, grace_s: float, *, at_front: bool = False, pipeline=None
    ) -> Job:
        """One RQ job for the next claim of `record`; its timeout is the solve budget plus the grace period (written
        by `pipeline` when given, which the caller executes)."""
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
            pipeline=pipeline,
        )

    def in_flight(self) -> dict[str, tuple[str, str]]:
        """Row id -> (RQ job id, stage) of the jobs a worker has taken off the queue: `intermediate` (dequeued, not
        started yet: RQ's intermediate queue) or `started`."""
        found = {plan_id_of(i): (i, "intermediate") for i in self.queue.intermediate_queue.get_job_ids()}
        found.update((plan_id_of(i), (i, "started")) for i in self.queue.started_job_registry.get_job_ids(cleanup=False))
        return found


class RQQueue:
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
        self.store = store
        self.runner = runner
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
        if self.queue_size is not None and self.keys.queue.count >= self.queue_size:
            raise QueueFull(self.queue_size, self._retry_after_s(self.queue_size))  # cheap early answer
        record = self.store.get(plan_id)
        if record is None or record.status != PlanState.queued:
            return
        if self.queue_size is None:
            self.keys.enqueue(record, self.runner.budget_s(record), self.grace_s)
            return
        self._enqueue_bounded(record)

    def _enqueue_bounded(self, record: PlanRecord) -> None:
        """Count and enqueue as one Redis transaction: WATCH the queue's list, count it, enqueue in MULTI/EXEC. An
        enqueue or dequeue by anyone in between makes EXEC fail and the count is taken again, so no more than
        `queue_size` jobs ever wait, however many API processes submit at once."""
        key = self.keys.queue.key
        budget_s = self.runner.budget_s(record)
        with self.keys.redis.pipeline() as pipe:
            for _ in range(ENQUEUE_TRIES):
                try:
                    pipe.watch(key)
                    waiting = pipe.llen(key)
                    if waiting >= self.queue_size:
                        raise QueueFull(self.queue_size, self._retry_after_s(waiting))
                    pipe.multi()
                    self.keys.enqueue(record, budget_s, self.grace_s, pipeline=pipe)
                    pipe.execute()
                    return
                except WatchError:
                    continue
        raise QueueFull(self.queue_size, self._retry_after_s(self.queue_size))  # that busy: as good as full

    def cancel(self, plan_id: str) -> PlanRecord | None:
        record, changed = self.store.cancel(plan_id)
        if changed and record is not None:
            try:
                self._stop_job(record)
            except QUEUE_OUTAGES as exc:  # the row is cancelled all the same; its horse sees that by itself
                log.warning("plan %s cancelled; Redis does not answer (%s), so its solve stops when its horse next "
                            "looks at the row (within a third of the lease)", record.id, type(exc).__name__)
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

    def unready_reason(self) -> str | None:
        if not self._running:
            return "the RQ queue is not started"
        try:
            self.keys.redis.ping()
        except RedisError as exc:
            return f"Redis (the solve queue) does not answer ({type(exc).__name__})"
        return None

    def wait(self, plan_id: str, timeout_s: float) -> PlanRecord | None:
        return poll_until_final(self.store, plan_id, timeout_s)

    def worker_count(self) -> int:
        """Workers whose registration is alive (a vanished worker's expires; one that lost it registers again)."""
        return len(Worker.all(queue=self.keys.queue, serializer=JSONSerializer))

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
    spool_dir: Path = Path(DEFAULT_SPOOL_DIR)
    result_retry_s: float = DEFAULT_RESULT_RETRY_S
    # The sweep's memory (in the pool process): RQ job id -> when (epoch s) it first saw the job taken off the queue
    # by a worker while its row stayed queued.
    in_flight_seen: dict[str, float] = field(default_factory=dict)


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
    spool_dir: str | Path = DEFAULT_SPOOL_DIR,
    result_retry_s: float = DEFAULT_RESULT_RETRY_S,
) -> WorkerContext:
    """Set the context solve jobs run with in this process and the processes it forks (`result_retry_s` is capped
    at MAX_RESULT_RETRY_S)."""
    global _context
    _context = WorkerContext(store, _Keys(url, queue_name), runner, grace_s, lease_s, solver_threads,
                             Path(spool_dir), min(max(0.0, result_retry_s), MAX_RESULT_RETRY_S))
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


OVERRUN = "overrun"  # an Answer's outcome for a solve stopped past its time limit (payload: the error)


@dataclass(frozen=True)
class Answer:
    """A finished solve's answer to one claim, as the store takes it and the spool keeps it: `outcome` and `payload`
    are the Runner's ("result", "invalid", "error"), or OVERRUN and the error for a solve stopped past its limit."""

    plan_id: str
    attempt: int
    outcome: str
    payload: Any

    def record(self, store: PlanStore) -> PlanState | None:
        """Write it onto its claim: the state written, or None when the claim is no longer current."""
        if self.outcome == OVERRUN:
            return store.finish_overrun(self.plan_id, self.attempt, self.payload)
        return record_outcome(store, self.plan_id, self.attempt, self.outcome, self.payload)

    def dumps(self) -> str:
        return json.dumps({"plan_id": self.plan_id, "attempt": self.attempt, "outcome": self.outcome,
                           "payload": self.payload})

    @classmethod
    def loads(cls, text: str) -> Answer:
        return cls(**json.loads(text))


class Spool:
    """Answers the store did not take while the database did not answer: one JSON file per claim in a directory of
    this machine (folder 0700, files 0600), each written whole (temporary file, fsync, rename) before the horse
    lets go of its claim. The worker pool replays them, oldest first, until the database takes them."""

    SUFFIX = ".answer.json"

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)

    def put(self, answer: Answer) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = self.directory / f"{answer.plan_id}-{answer.attempt}{self.SUFFIX}"
        temporary = self.directory / f".{path.name}.{os.getpid()}.tmp"
        with os.fdopen(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as out:
            out.write(answer.dumps())
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
        folder = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
        return path

    def entries(self) -> list[tuple[Path, Answer]]:
        """The spooled answers, oldest first (an unreadable file is moved aside as `.bad`, and logged)."""
        if not self.directory.is_dir():
            return []
        found = []
        for path in sorted(self.directory.glob(f"*{self.SUFFIX}"), key=_mtime):
            try:
                found.append((path, Answer.loads(path.read_text())))
            except FileNotFoundError:
                continue  # replayed meanwhile by another pool on this machine
            except (TypeError, ValueError) as exc:
                log.error("spooled answer %s cannot be read (%s); moved aside as .bad", path, exc)
                path.replace(path.with_name(path.name + ".bad"))
        return found

    def replay(self, store: PlanStore) -> int:
        """Write every spooled answer to the store and delete its file; how many. While the database does not answer
        this raises (one of DATABASE_OUTAGES) and keeps the answers not written yet."""
        replayed = 0
        for path, answer in self.entries():
            state = answer.record(store)
            if state is None:
                log.warning("plan %s: spooled answer of claim %d dropped: the claim is no longer current "
                            "(cancelled meanwhile)", answer.plan_id, answer.attempt)
            else:
                log.warning("plan %s: spooled answer of claim %d recorded (%s)", answer.plan_id, answer.attempt,
                            state.value)
            path.unlink(missing_ok=True)
            replayed += 1
        return replayed


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return math.inf


def _spool_lease(answer: Answer) -> Lease:
    host = socket.gethostname()
    return Lease(answer.attempt, f"spooled {job_id(answer.plan_id, answer.attempt - 1)}", f"spool on {host}",
                 os.getpid(), host)


def hold_spooled(ctx: WorkerContext, spool: Spool) -> int:
    """Renew the lease of every row whose answer waits in the spool, so that no sweep solves it again; how many."""
    entries = spool.entries()
    for _, answer in entries:
        ctx.keys.redis.set(ctx.keys.lease_key(answer.plan_id), _spool_lease(answer).dumps(),
                           px=int(ctx.lease_s * 1000))
    return len(entries)


def _retrying(ctx: WorkerContext, call: Callable[[], _T], doing: str, database: Availability) -> _T:
    """`call()`, retried with backoff while the database does not answer, for up to `ctx.result_retry_s`; then the
    last outage error is raised."""
    deadline = time.monotonic() + ctx.result_retry_s
    retry = 0
    while True:
        try:
            result = call()
        except DATABASE_OUTAGES as exc:
            database.failed(exc, doing)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise
            time.sleep(min(backoff_s(retry), remaining))
            retry += 1
            continue
        database.ok()
        return result


def deliver(ctx: WorkerContext, answer: Answer, database: Availability) -> PlanState | None | Path:
    """Write a finished solve's answer to the store, retrying while the database does not answer; after
    `ctx.result_retry_s`, spool it (the path returned). A database outage never costs a solve."""
    try:
        return _retrying(ctx, lambda: answer.record(ctx.store), f"writing the answer of plan {answer.plan_id}",
                         database)
    except DATABASE_OUTAGES:
        path = Spool(ctx.spool_dir).put(answer)
        log.warning("plan %s: the database did not take the answer of claim %d within %g s; spooled to %s (the "
                    "worker pool records it once the database answers)", answer.plan_id, answer.attempt,
                    ctx.result_retry_s, path)
        return path


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
    ctx = _require_context()
    _overran.clear()
    database = Availability("the database", log)
    asked = time.monotonic()
    try:
        record = _retrying(ctx, lambda: ctx.store.claim(plan_id), f"claiming plan {plan_id}", database)
    except DATABASE_OUTAGES as exc:
        log.warning("plan %s: not claimed, the database did not answer for %g s (%s); it stays queued and the sweep "
                    "enqueues it again", plan_id, ctx.result_retry_s, type(exc).__name__)
        return "skipped: the database did not answer; the row stays queued"
    if record is None:
        return "skipped: the row is no longer queued (cancelled, or another job claimed it)"
    if time.monotonic() - asked > 1.0:
        _restart_job_timeout()
    log.info("plan %s: solving claim %d", plan_id, record.attempts)
    job = get_current_job()
    holder = _LeaseHolder(ctx, record, job.id if job is not None else job_id(plan_id, record.attempts - 1),
                          job.worker_name if job is not None else "")
    holder.start()
    spooled = None
    try:
        try:
            set_incumbent_sink(lambda document: _record_incumbent(ctx, record, document, database))
            try:
                outcome, payload = ctx.runner.solve(SolveTask.of(record, ctx.solver_threads))
            finally:
                set_incumbent_sink(None)
        except JobTimeoutException:
            outcome, payload = "error", "timed out"  # recorded below as the overrun it is
        _stop_job_timeout()
        holder.solved.set()
        if _overran.is_set():
            outcome, payload = OVERRUN, _overrun_error(ctx.runner.budget_s(record), ctx.grace_s)
        answer = Answer(plan_id, record.attempts, outcome, payload)
        written = deliver(ctx, answer, database)
        if isinstance(written, Path):
            spooled = answer
            return f"spooled: {written}"
        return written.value if written is not None else "skipped: the claim was no longer current"
    finally:
        holder.release(spooled=spooled)


def _record_incumbent(ctx: WorkerContext, record: PlanRecord, document: dict[str, Any], database: Availability) -> None:
    """Keep a running solve's best plan on its row; while the database does not answer, go on without it."""
    try:
        ctx.store.record_incumbent(record.id, record.attempts, document)
    except DATABASE_OUTAGES as exc:
        database.failed(exc, f"recording an incumbent of plan {record.id}")
        return
    database.ok()


class _LeaseHolder(threading.Thread):
    """In the horse: renews the lease, and exits the horse when its worker is gone or the row is not its claim.
    While the database does not answer it cannot tell, and keeps the lease (the claim is ours until the store says
    otherwise); while Redis does not answer it tries again at the next renewal. Once the solve is over (`solved`)
    it only renews, while the answer is written."""

    def __init__(self, ctx: WorkerContext, record: PlanRecord, rq_job: str, worker: str):
        super().__init__(name="optsched-lease", daemon=True)
        self.ctx, self.plan_id, self.attempt = ctx, record.id, record.attempts
        self.key = ctx.keys.lease_key(record.id)
        self.lease = Lease(record.attempts, rq_job, worker, os.getpid(), socket.gethostname())
        self.parent = os.getppid()
        self.done = threading.Event()
        self.solved = threading.Event()
        self.redis_state = Availability("Redis", log)
        self.database = Availability("the database", log)
        self._renew()

    def _renew(self) -> None:
        try:
            self.ctx.keys.redis.set(self.key, self.lease.dumps(), px=int(self.ctx.lease_s * 1000))
        except QUEUE_OUTAGES as exc:
            self.redis_state.failed(exc, f"renewing the lease of plan {self.plan_id}")
            return
        self.redis_state.ok()

    def _claim_lost(self) -> bool:
        """Whether the store says the row is no longer this solve's claim (False while the database is away)."""
        try:
            row = self.ctx.store.get(self.plan_id)
        except DATABASE_OUTAGES as exc:
            self.database.failed(exc, f"checking the claim of plan {self.plan_id}")
            return False
        self.database.ok()
        if row is None or row.status != PlanState.solving or row.attempts != self.attempt:
            log.warning("plan %s is no longer this solve's claim (%s); stopping", self.plan_id,
                        row.status if row else "deleted")
            return True
        return False

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
                if not self.solved.is_set() and self._claim_lost() and not self.solved.is_set():
                    with contextlib.suppress(RedisError):
                        self.ctx.keys.redis.delete(self.key)
                    os._exit(EXIT_CLAIM_LOST)
                self._renew()
            except Exception:  # noqa: BLE001 - an unexpected hiccup: try again at the next renewal
                log.exception("plan %s: cannot renew the lease", self.plan_id)

    def release(self, spooled: Answer | None = None) -> None:
        """The solve's answer is written (delete the lease) or spooled (hand the lease to the spool's holder)."""
        self.done.set()
        try:
            if spooled is not None:
                self.ctx.keys.redis.set(self.key, _spool_lease(spooled).dumps(), px=int(self.ctx.lease_s * 1000))
            else:
                self.ctx.keys.redis.delete(self.key)
        except RedisError:
            log.warning("plan %s: cannot update the lease (Redis does not answer); it expires in %g s", self.plan_id,
                        self.ctx.lease_s)



class _OverrunPenalty(UnixSignalDeathPenalty):
    """RQ's job timeout, noting that it fired so that `solve_job` records `no_solution` (the planner catches it)."""

    def handle_death_penalty(self, signum, frame):
        _overran.set()
        super().handle_death_penalty(signum, frame)


class SolveWorker(Worker):
    """An RQ worker that requeues (or fails, or records as overrun) the row of a horse that died, and waits out Redis
    outages: its bookkeeping in Redis is skipped while Redis does not answer (a running horse needs none), an idle
    worker waits for Redis with backoff, it registers again when Redis lost its registration, and once told to
    stop it exits within STOP_GRACE_S of having no solve running, whatever it waits on."""

    death_penalty_class = _OverrunPenalty
    max_connection_wait_time = BACKOFF_MAX_S  # RQ's own wait before it polls a Redis that failed again

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs.setdefault("worker_ttl", WORKER_TTL_S)
        kwargs.setdefault("job_monitoring_interval", JOB_MONITORING_S)
        super().__init__(*args, **kwargs)
        self.redis_state = Availability(f"Redis (worker {self.name})", log)
        self._stop_watchdog: threading.Thread | None = None

    def _quietly(self, call: Callable[[], Any], doing: str) -> bool:
        """Run RQ bookkeeping; while Redis does not answer, skip it (logged once per outage). Whether it ran."""
        try:
            call()
        except QUEUE_OUTAGES as exc:
            self.redis_state.failed(exc, doing)
            return False
        self.redis_state.ok()
        return True

    def heartbeat(self, timeout: int | None = None, pipeline=None) -> None:
        """RQ's heartbeat; without Redis an idle worker waits here (with backoff) until Redis answers again."""
        if pipeline is not None:
            return super().heartbeat(timeout, pipeline)
        retry = 0
        while True:
            try:
                super().heartbeat(timeout)
                self._register_again_if_lost()
            except QUEUE_OUTAGES as exc:
                self.redis_state.failed(exc, "heartbeat")
                if self.horse_pid or self._stop_watchdog is not None:
                    return  # a solve runs (it needs no Redis), or the worker is stopping: no waiting here
                time.sleep(backoff_s(retry))
                retry += 1
                continue
            self.redis_state.ok()
            return

    def _register_again_if_lost(self) -> None:
        """After Redis restarted without its data, this worker is in no worker set: register it again."""
        if self.connection.sismember(self.redis_workers_keys, self.key):
            return
        with self.connection.pipeline() as pipeline:
            pipeline.hset(self.key, mapping={**self.serialize(), "state": self.get_state() or "idle"})
            worker_registration.register(self, pipeline)
            pipeline.expire(self.key, self.worker_ttl + 60)
            pipeline.execute()
        log.warning("worker %s registered again (Redis had lost its registration)", self.name)

    def maintain_heartbeats(self, job: Job) -> None:
        def beat() -> None:
            super(SolveWorker, self).maintain_heartbeats(job)
            self._register_again_if_lost()

        self._quietly(beat, "heartbeat while solving")

    def set_current_job_working_time(self, current_job_working_time: float, pipeline=None) -> None:
        if pipeline is not None:
            return super().set_current_job_working_time(current_job_working_time, pipeline)
        self._quietly(lambda: super(SolveWorker, self).set_current_job_working_time(current_job_working_time),
                      "recording the working time")

    def set_state(self, state: str, pipeline=None) -> None:
        if pipeline is not None:
            return super().set_state(state, pipeline)
        self._quietly(lambda: super(SolveWorker, self).set_state(state), "recording the worker's state")

    def set_shutdown_requested_date(self) -> None:
        self._quietly(super().set_shutdown_requested_date, "recording the stop request")

    def handle_job_failure(self, job: Job, queue: Queue, started_job_registry=None, exc_string: str = "") -> None:
        self._quietly(lambda: super(SolveWorker, self).handle_job_failure(job, queue, started_job_registry, exc_string),
                      f"recording that job {job.id} failed")

    def teardown(self) -> None:
        self._quietly(super().teardown, "unregistering")

    def subscribe(self) -> None:
        """RQ's subscription to stop-job commands, with a listener thread that waits out Redis outages quietly."""
        self.pubsub = self.connection.pubsub()
        self.pubsub.subscribe(**{self.pubsub_channel_name: self.handle_payload})
        self.pubsub_thread = self.pubsub.run_in_thread(sleep_time=60, daemon=True,
                                                       exception_handler=self._pubsub_failed)

    def _pubsub_failed(self, exc: BaseException, pubsub, thread) -> None:
        if not isinstance(exc, QUEUE_OUTAGES):
            raise exc
        self.redis_state.failed(exc, "stop-job channel")
        time.sleep(2.0)  # redis-py subscribes again once it reconnects

    def execute_job(self, job: Job, queue: Queue) -> None:
        try:
            super().execute_job(job, queue)
        except QUEUE_OUTAGES as exc:  # before the fork, or after the horse ended: no solve is left behind
            self.redis_state.failed(exc, f"running job {job.id}")
            log.warning("worker %s: Redis stopped answering around job %s; if its row did not finish, the sweep "
                        "enqueues it again", self.name, job.id)

    def perform_job(self, job: Job, queue: Queue) -> bool:
        """(In the horse.) RQ's bookkeeping around the job may fail while Redis does not answer; the horse then still
        exits normally (its answer is in the store, or its row is left queued for the sweep)."""
        try:
            return super().perform_job(job, queue)
        except QUEUE_OUTAGES as exc:
            log.warning("job %s: RQ could not record it (Redis does not answer: %s)", job.id, type(exc).__name__)
            return False

    def request_stop(self, signum, frame) -> None:
        if self._stop_watchdog is None:
            self._stop_watchdog = threading.Thread(target=self._exit_when_stuck, name="optsched-stop", daemon=True)
            self._stop_watchdog.start()
        super().request_stop(signum, frame)

    def _exit_when_stuck(self) -> None:
        """After a stop request: once no solve runs, the worker has STOP_GRACE_S to exit by itself (unregistering
        on the way); if a long poll or an unanswering Redis holds it longer, it exits here."""
        idle_since = None
        while True:
            time.sleep(0.1)
            if self.horse_pid:
                idle_since = None
                continue
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since >= STOP_GRACE_S:
                log.warning("worker %s: not stopped %g s after the stop request with no solve running; exiting now",
                            self.name, STOP_GRACE_S)
                os._exit(0)

    def handle_work_horse_killed(self, job: Job, retpid, ret_val, rusage) -> None:
        super().handle_work_horse_killed(job, retpid, ret_val, rusage)
        ctx = _require_context()
        try:
            plan_id, attempt = plan_id_of(job.id), claim_of(job.id)
        except ValueError:
            return  # not one of ours
        try:
            record = ctx.store.get(plan_id)
            if record is None or record.status != PlanState.solving or record.attempts != attempt:
                return  # it never claimed, or stopped itself after losing its claim: nothing of ours to recover
            self._quietly(lambda: ctx.keys.redis.delete(ctx.keys.lease_key(plan_id)), "deleting a lease")
            elapsed = (job.ended_at - job.started_at).total_seconds() if job.started_at and job.ended_at else 0.0
            if job.timeout and job.timeout > 0 and elapsed >= job.timeout:
                ctx.store.finish_overrun(plan_id, record.attempts,
                                         _overrun_error(ctx.runner.budget_s(record), ctx.grace_s))
                return
            recover(ctx, record, f"its solve process died ({_exit_note(ret_val)}) on worker {self.name}")
        except DATABASE_OUTAGES as exc:
            log.warning("plan %s: its solve process died (%s) while the database does not answer (%s); the sweep "
                        "requeues it", plan_id, _exit_note(ret_val), type(exc).__name__)


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


def sweep(ctx: WorkerContext) -> int:
    """Requeue rows no live process owns; how many:
    - `solving` without a lease, once Redis has been up for a whole lease (after a restart, live horses renew their
      leases first);
    - `queued` with no RQ job waiting for a worker and none taken by one, or with its job taken off the queue (RQ's
      intermediate queue, or started) by a worker that is gone: still there, its row still queued, a lease later.
    A queued row is left a lease to be enqueued by its API process, or less after a Redis restart: a row stored
    before Redis started lost whatever job it had (an API enqueueing it meanwhile makes a second job for the same
    claim, which finds the row claimed and skips).
    """
    now = datetime.now(UTC)
    uptime_s = redis_uptime_s(ctx.keys.redis)
    settle = timedelta(seconds=min(ctx.lease_s, uptime_s))
    adopted = 0
    leases_complete = uptime_s >= ctx.lease_s
    for record in ctx.store.stale_solving(now - settle):
        lease = ctx.keys.lease(record.id)
        if (lease is not None and lease.attempt == record.attempts) or not leases_complete:
            continue
        recover(ctx, record, f"its worker stopped renewing its lease (no word for {ctx.lease_s:g} s)")
        adopted += 1
    waiting = {plan_id_of(i) for i in ctx.keys.queue.get_job_ids()}
    in_flight = ctx.keys.in_flight()
    clock = time.time()
    for plan_id in ctx.store.ids_with_state(PlanState.queued):
        if plan_id in waiting:
            continue
        taken = in_flight.get(plan_id)
        if taken is not None and clock - ctx.in_flight_seen.setdefault(taken[0], clock) < ctx.lease_s:
            continue  # a worker is taking it (or was, moments ago)
        record = ctx.store.get(plan_id)
        if record is None or record.status != PlanState.queued or record.submitted_at > now - settle:
            continue
        if taken is None:
            log.warning("plan %s was queued in the store but not in RQ; enqueued", plan_id)
        else:
            rq_job, stage = taken
            if stage == "intermediate":
                ctx.keys.queue.intermediate_queue.remove(rq_job)
            log.warning("plan %s: its RQ job %s was taken off the queue (%s) %.0f s ago by a worker that never ran "
                        "it; enqueued again", plan_id, rq_job, stage, clock - ctx.in_flight_seen.pop(rq_job))
        ctx.keys.enqueue(record, ctx.runner.budget_s(record), ctx.grace_s)
        adopted += 1
    taken_now = {rq_job for rq_job, _ in in_flight.values()}
    for rq_job in [j for j in ctx.in_flight_seen if j not in taken_now]:
        del ctx.in_flight_seen[rq_job]
    return adopted


def housekeeping(ctx: WorkerContext, redis_state: Availability, database: Availability) -> None:
    """A worker pool's periodic chores, each waiting out an outage of its dependency: write the answers spooled on
    this machine to the store, hold the leases of those the database has not taken yet, then `sweep`."""
    spool = Spool(ctx.spool_dir)
    try:
        spool.replay(ctx.store)
    except DATABASE_OUTAGES as exc:
        database.failed(exc, "writing spooled answers")
    try:
        hold_spooled(ctx, spool)
        sweep(ctx)
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


_fork = get_context("fork")


class SolveWorkerPool(WorkerPool):
    """RQ's worker pool (respawns dead workers, with backoff for those that die young), running `SolveWorker`s,
    plus the periodic `housekeeping` (spool, sweep)."""

    def __init__(self, ctx: WorkerContext, num_workers: int):
        super().__init__([ctx.keys.queue_name], connection=ctx.keys.redis, num_workers=num_workers,
                         worker_class=SolveWorker, serializer=JSONSerializer)
        self.ctx = ctx
        self._next_chores = 0.0
        self._born: dict[str, float] = {}
        self._respawn_delay = 0.0
        self._respawn_at = 0.0
        self.redis_state = Availability("Redis (worker pool)", log)
        self.database = Availability("the database (worker pool)", log)

    def get_worker_process(self, name: str, burst: bool, _sleep: float = 0, logging_level: str = "INFO"):
        return _fork.Process(target=_run_worker, args=(name, burst, logging_level), name=f"optsched-worker {name}")

    def start_worker(self, count: int | None = None, burst: bool = True, _sleep: float = 0,
                     logging_level: str = "INFO") -> None:
        super().start_worker(count, burst=burst, _sleep=_sleep, logging_level=logging_level)
        self._born[next(reversed(self.worker_dict))] = time.monotonic()

    def handle_dead_worker(self, worker_data) -> None:
        super().handle_dead_worker(worker_data)
        lived = time.monotonic() - self._born.pop(worker_data.name, -math.inf)
        if lived >= YOUNG_WORKER_S or self.status == self.Status.STOPPED:
            self._respawn_delay = 0.0
            return
        self._respawn_delay = min(MAX_RESPAWN_DELAY_S, max(1.0, 2 * self._respawn_delay))
        self._respawn_at = time.monotonic() + self._respawn_delay
        log.warning("worker process %d exited %.1f s after it started; starting another in %g s", worker_data.pid,
                    lived, self._respawn_delay)

    def check_workers(self, respawn: bool = True) -> None:
        super().check_workers(respawn and time.monotonic() >= self._respawn_at)
        if time.monotonic() >= self._next_chores:
            self._next_chores = time.monotonic() + self.ctx.lease_s / 3
            housekeeping(self.ctx, self.redis_state, self.database)


def wait_for_redis(redis: Redis, state: Availability) -> None:
    """Return once Redis answers a ping, waiting with backoff (one log line when it fails, one when it is back)."""
    retry = 0
    while True:
        try:
            redis.ping()
        except QUEUE_OUTAGES as exc:
            state.failed(exc, "waiting for it")
            time.sleep(backoff_s(retry))
            retry += 1
            continue
        state.ok()
        return


def _exit_now(signum, frame) -> None:
    raise SystemExit(0)


def _run_worker(name: str, burst: bool, logging_level: str) -> None:
    """One RQ worker process of the pool; it exits (killing its horse) if the pool process disappears, and waits
    for Redis (with backoff) before it starts instead of dying at once."""
    ctx = _require_context()
    pool_pid = os.getppid()
    running: list[SolveWorker] = []

    def exit_when_orphaned() -> None:
        while os.getppid() == pool_pid:
            time.sleep(ORPHAN_POLL_S)
        if running and running[0].horse_pid:
            running[0].kill_horse()
        os._exit(EXIT_ORPHANED)

    threading.Thread(target=exit_when_orphaned, daemon=True).start()
    for signum in (signal.SIGINT, signal.SIGTERM):  # until RQ installs its own handlers in `work`
        signal.signal(signum, _exit_now)
    connection = Redis.from_url(ctx.keys.url, socket_connect_timeout=5, socket_keepalive=True)
    wait_for_redis(connection, Availability(f"Redis (worker process {os.getpid()})", log))
    queue = Queue(ctx.keys.queue_name, connection=connection, serializer=JSONSerializer)
    try:
        running.append(SolveWorker([queue], name=f"{socket.gethostname()}.{name[:12]}", connection=connection,
                                   serializer=JSONSerializer))
        running[0].work(burst=burst, logging_level=logging_level, with_scheduler=False)
    except QUEUE_OUTAGES as exc:
        log.warning("worker process %d stops: Redis stopped answering as it started (%s: %s); the pool starts "
                    "another", os.getpid(), type(exc).__name__, exc)


def open_store(url: str) -> PlanStore:
    """The workers' store; while the database does not answer (at a worker's start), wait for it with backoff."""
    state = Availability("the database", log)
    retry = 0
    while True:
        try:
            store = PlanStore(url)
        except DATABASE_OUTAGES as exc:
            state.failed(exc, "opening the store")
            time.sleep(backoff_s(retry))
            retry += 1
            continue
        state.ok()
        return store


def run_workers(ctx: WorkerContext, concurrency: int, *, burst: bool = False) -> None:
    """Run `concurrency` RQ workers until interrupted (SIGINT/SIGTERM: each finishes its solve first); first write
    what a previous run spooled and sweep."""
    # The pool process imported the planners with ctx.runner (the service's kinds): each forked horse starts solving at once.
    pool = SolveWorkerPool(ctx, concurrency)
    housekeeping(ctx, pool.redis_state, pool.database)
    pool.start(burst=burst, logging_level="INFO")
