"""The worker side of the RQ queue: `optsched worker` runs `run_workers`, an RQ `WorkerPool` of `SolveWorker`s. RQ
forks a fresh work horse per job (so HiGHS's memory growth dies with it), which runs `solve_job`
(optsched.infra.rq.job); the pool also runs the periodic `housekeeping` (optsched.infra.rq.sweep).

Outages of Redis or the database are waited out, not crashed on (each process logs one line when a dependency
stops answering and one when it is back): a worker waits for Redis with backoff instead of exiting (the pool backs
off respawning workers that die young); it registers again when Redis lost its registration (a restart without
persistence), and an idle worker told to stop exits within STOP_GRACE_S whatever it waits on.

RQ has public hooks for little of this, so `SolveWorker` and `SolveWorkerPool` override RQ's worker methods (each
override calls RQ's own); those methods are RQ 2.x internals, pinned by the tests in tests/scale and tests/outages.
"""

from __future__ import annotations

import logging
import math
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from multiprocessing import get_context
from typing import Any

from redis import Redis
from rq import Queue, Worker, worker_registration
from rq.job import Job
from rq.serializers import JSONSerializer
from rq.worker import WorkerStatus
from rq.worker_pool import WorkerPool

from optsched.infra.availability import BACKOFF_MAX_S, Availability, backoff_s, retry_while_away
from optsched.infra.queue import overrun_error
from optsched.infra.rq.context import WorkerContext, require_context
from optsched.infra.rq.job import OverrunPenalty
from optsched.infra.rq.keys import QUEUE_OUTAGES, claim_of, plan_id_of
from optsched.infra.rq.lease import EXIT_ORPHANED, ORPHAN_POLL_S
from optsched.infra.rq.pricing import pricing_queue_name
from optsched.infra.rq.sweep import housekeeping, recover
from optsched.infra.store import DATABASE_OUTAGES, JobState, PlanStore

log = logging.getLogger(__name__)

# An idle worker told to stop exits within this many seconds, whatever it waits on (a long poll, a dead Redis).
STOP_GRACE_S = 3.0
# Worker TTL: RQ's long poll lasts this minus 15 s, so an idle worker looks at Redis (and its own registration)
# every 5 s; a worker that vanished drops out of the worker count 60 s after its last heartbeat.
WORKER_TTL_S = 20
JOB_MONITORING_S = 10
# A worker process that dies sooner than this after its start is respawned with backoff (up to the cap).
YOUNG_WORKER_S, MAX_RESPAWN_DELAY_S = 10.0, 30.0


class SolveWorker(Worker):
    """An RQ worker that requeues (or fails, or records as overrun) the row of a horse that died, and waits out Redis
    outages: its bookkeeping in Redis is skipped while Redis does not answer (a running horse needs none), an idle
    worker waits for Redis with backoff, it registers again when Redis lost its registration, and once told to
    stop it exits within STOP_GRACE_S of having no solve running, whatever it waits on."""

    death_penalty_class = OverrunPenalty
    max_connection_wait_time = BACKOFF_MAX_S  # RQ's own wait before it polls a Redis that failed again

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs.setdefault("worker_ttl", WORKER_TTL_S)
        kwargs.setdefault("job_monitoring_interval", JOB_MONITORING_S)
        kwargs.setdefault("work_horse_killed_handler", self._horse_died)
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
        # RQ registers a worker only at birth (register_birth, which resets the birth date and refuses a name whose
        # hash is left): its steps, keeping the worker's state.
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

    def run_maintenance_tasks(self) -> None:
        # RQ runs this first thing in work(), outside its loop's Redis retry: Redis lost at that moment killed the
        # worker process. Cleaning registries can wait for the next round.
        self._quietly(super().run_maintenance_tasks, "cleaning registries")

    def set_shutdown_requested_date(self) -> None:
        self._quietly(super().set_shutdown_requested_date, "recording the stop request")

    def handle_job_failure(self, job: Job, queue: Queue, started_job_registry=None, exc_string: str = "") -> None:
        self._quietly(lambda: super(SolveWorker, self).handle_job_failure(job, queue, started_job_registry, exc_string),
                      f"recording that job {job.id} failed")

    def teardown(self) -> None:
        self._quietly(super().teardown, "unregistering")

    def subscribe(self) -> None:
        """RQ's subscription to stop-job commands, with a listener thread that waits out Redis outages quietly."""
        # RQ's own subscribe takes no exception handler: its two steps, with one.
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
        if queue.name == pricing_queue_name(require_context().keys.queue_name):
            # A pricing chunk runs here, not in a forked horse: it takes a fraction of a second and reads the
            # session's arrays, which this process keeps between chunks (optsched.infra.rq.pricing).
            self.prepare_execution(job)
            self.perform_job(job, queue)
            self.set_state(WorkerStatus.IDLE)
            return
        try:
            super().execute_job(job, queue)
        except QUEUE_OUTAGES as exc:  # before the fork, or after the horse ended: no solve is left behind
            self.redis_state.failed(exc, f"running job {job.id}")
            log.warning("worker %s: Redis stopped answering around job %s; if its row did not finish, the sweep "
                        "enqueues it again", self.name, job.id)

    def perform_job(self, job: Job, queue: Queue) -> bool:
        """(In the horse; in the worker for a pricing chunk.) RQ's bookkeeping around the job may fail while Redis
        does not answer; the horse then still exits normally (its answer is in the store, or its row is left queued
        for the sweep)."""
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

    def _horse_died(self, job: Job, retpid: int, ret_val: int, rusage: object) -> None:
        """(RQ's work_horse_killed_handler.) Requeue, fail or record as overrun the row of a horse that died."""
        ctx = require_context()
        try:
            plan_id, attempt = plan_id_of(job.id), claim_of(job.id)
        except ValueError:
            return  # not one of ours
        try:
            record = ctx.store.get(plan_id)
            if record is None or record.status != JobState.solving or record.attempts != attempt:
                return  # it never claimed, or stopped itself after losing its claim: nothing of ours to recover
            self._quietly(lambda: ctx.keys.redis.delete(ctx.keys.lease_key(plan_id)), "deleting a lease")
            elapsed = (job.ended_at - job.started_at).total_seconds() if job.started_at and job.ended_at else 0.0
            if job.timeout and job.timeout > 0 and elapsed >= job.timeout:
                ctx.store.finish_overrun(plan_id, record.attempts,
                                         overrun_error(ctx.runner.budget_s(record), ctx.grace_s))
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

    # RQ's WorkerPool has no public hook for its processes' target or its respawn policy: these override its methods.
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


def _exit_now(signum, frame) -> None:
    raise SystemExit(0)


def _run_worker(name: str, burst: bool, logging_level: str) -> None:
    """One RQ worker process of the pool; it exits (killing its horse) if the pool process disappears, and waits
    for Redis (with backoff) before it starts instead of dying at once."""
    ctx = require_context()
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
    retry_while_away(connection.ping, QUEUE_OUTAGES, Availability(f"Redis (worker process {os.getpid()})", log),
                     "waiting for it")
    queue = Queue(ctx.keys.queue_name, connection=connection, serializer=JSONSerializer)
    # Pricing chunks first: a solve waits on them (or prices them itself), while a queued solve waits anyway.
    queues = [Queue(pricing_queue_name(ctx.keys.queue_name), connection=connection, serializer=JSONSerializer), queue]
    try:
        running.append(SolveWorker(queues, name=f"{socket.gethostname()}.{name[:12]}", connection=connection,
                                   serializer=JSONSerializer))
        running[0].work(burst=burst, logging_level=logging_level, with_scheduler=False)
    except QUEUE_OUTAGES as exc:
        log.warning("worker process %d stops: Redis stopped answering as it started (%s: %s); the pool starts "
                    "another", os.getpid(), type(exc).__name__, exc)


def open_store(url: str) -> PlanStore:
    """The workers' store; while the database does not answer (at a worker's start), wait for it with backoff."""
    return retry_while_away(lambda: PlanStore(url), DATABASE_OUTAGES, Availability("the database", log),
                            "opening the store")


def run_workers(ctx: WorkerContext, concurrency: int, *, burst: bool = False) -> None:
    """Run `concurrency` RQ workers until interrupted (SIGINT/SIGTERM: each finishes its solve first); first write
    what a previous run spooled and sweep."""
    # The pool process imported the planners with ctx.runner (the service's kinds): each forked horse starts solving
    # at once.
    pool = SolveWorkerPool(ctx, concurrency)
    housekeeping(ctx, pool.redis_state, pool.database)
    pool.start(burst=burst, logging_level="INFO")
