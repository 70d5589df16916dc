"""The in-server solve queue: a bounded pool of local worker processes (`ProcessPool`, a `SolveQueue`).

A dispatcher thread owns the worker processes: it claims queued plans in the store, sends each workload over a
pipe to an idle worker, writes the answer back in one transaction, kills a worker whose solve overruns its time
limit plus a grace period (recorded `no_solution`) or whose plan is cancelled, and replaces every worker after
`max_solves_per_worker` solves (HiGHS does not give all memory back). Only the dispatcher writes solve results,
so a worker process never touches the database.
"""

from __future__ import annotations

import atexit
import collections
import functools
import logging
import math
import multiprocessing
import os
import signal
import socket
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as wait_for_connections
from multiprocessing.context import SpawnProcess
from typing import Any

from optsched.infra.availability import Availability, backoff_s
from optsched.infra.queue import (
    QueueFull,
    Runner,
    SolveFunction,
    SolveTask,
    overrun_error,
    record_outcome,
    set_incumbent_sink,
)
from optsched.infra.store import DATABASE_OUTAGES, MAX_ATTEMPTS, JobState, PlanRecord, PlanStore

log = logging.getLogger(__name__)

# The dispatcher looks for plans nobody owns (left by a process that died) this often, in seconds.
SWEEP_INTERVAL_S = 15.0
# A claim older than its time limit + grace + this slack, and not ours, belongs to a process that died.
STALE_CLAIM_SLACK_S = 60.0
# Seconds a freshly started worker may take to import the planner before it is replaced.
WORKER_START_TIMEOUT_S = 60.0


@dataclass(eq=False)
class _Worker:
    process: SpawnProcess
    conn: Connection
    started: float
    ready: bool = False
    retiring: bool = False
    solves: int = 0
    plan_id: str | None = None
    attempt: int = 0
    dispatched: float = 0.0
    deadline: float = math.inf
    time_limit_s: float = 0.0


@dataclass
class _Waiters:
    event: threading.Event = field(default_factory=threading.Event)
    count: int = 0


class ProcessPool:
    """Solves in `workers` local processes; at most `queue_size` plans wait; see the module docstring."""

    def __init__(
        self,
        store: PlanStore,
        *,
        workers: int | None = None,
        queue_size: int = 64,
        max_solves_per_worker: int = 50,
        grace_s: float = 5.0,
        solver_threads: int | None = 1,
        runner: Runner,
    ):
        self.store = store
        self.runner = runner
        self.size = workers or os.cpu_count() or 1
        self.queue_size = queue_size
        self.max_solves_per_worker = max_solves_per_worker
        self.grace_s = grace_s
        self.solver_threads = solver_threads
        self._solve = runner.solve
        self._context = multiprocessing.get_context("spawn")  # a fresh interpreter: no threads or locks inherited
        self._lock = threading.Lock()
        self._queue: collections.deque[str] = collections.deque()
        self._cancel_requests: set[str] = set()
        self._waiters: dict[str, _Waiters] = {}
        self._workers: list[_Worker] = []
        self._solve_seconds: collections.deque[float] = collections.deque(maxlen=20)
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._next_spawn = 0.0
        self._next_sweep = 0.0
        self.spawned = 0  # worker processes started so far
        # Answers the store did not take (the database did not answer): written again until it does.
        self._unrecorded: list[tuple[str, int, str, Any]] = []
        self._next_flush = 0.0
        self._flush_retries = 0
        self._database = Availability("the database", log)

    # -- the interface ---------------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            return
        if self._stopping.is_set():
            raise RuntimeError("a stopped ProcessPool cannot start again; make a new one")
        recovered = self.store.recover()
        with self._lock:
            self._queue.extend(recovered)
        if recovered:
            log.info("requeued %d plan(s) left queued or solving by a previous run", len(recovered))
        self._next_sweep = time.monotonic() + SWEEP_INTERVAL_S
        self._thread = threading.Thread(target=self._run, name="optsched-dispatcher", daemon=True)
        self._thread.start()
        atexit.register(self.stop)

    def stop(self, timeout_s: float = 5.0) -> None:
        if self._stopping.is_set():
            return
        self._stopping.set()
        if self._thread is not None:
            self._wake()
            self._thread.join(timeout_s)
            for w in list(self._workers):
                if w.plan_id is not None:
                    self.store.requeue(w.plan_id, w.attempt)
                self._discard(w, kill=w.plan_id is not None)
            if self._unrecorded:
                log.warning("stopping with %d solve result(s) the database did not take; those plans are solved "
                            "again at the next start", len(self._unrecorded))
            atexit.unregister(self.stop)
        self._wake_r.close()
        self._wake_w.close()

    def submit(self, plan_id: str) -> None:
        with self._lock:
            if len(self._queue) >= self.queue_size:
                raise QueueFull(self.queue_size, self._retry_after_s())
            self._queue.append(plan_id)
        self._wake()

    def cancel(self, plan_id: str) -> PlanRecord | None:
        record, changed = self.store.cancel(plan_id)
        if changed:
            with self._lock:
                try:
                    self._queue.remove(plan_id)
                except ValueError:
                    self._cancel_requests.add(plan_id)
            self._wake()
            self._notify(plan_id)
        return record

    def depth(self) -> int:
        with self._lock:
            return len(self._queue)

    def worker_count(self) -> int:
        return sum(1 for w in self._workers if not w.retiring)

    def healthy(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and not self._stopping.is_set()

    def unready_reason(self) -> str | None:
        return None if self.healthy() else "the solve dispatcher is not running"

    def wait(self, plan_id: str, timeout_s: float) -> PlanRecord | None:
        with self._lock:
            waiters = self._waiters.setdefault(plan_id, _Waiters())
            waiters.count += 1
        try:
            record = self.store.get(plan_id)
            if record is None or record.status.final or timeout_s <= 0:
                return record
            waiters.event.wait(timeout_s)
            return self.store.get(plan_id)
        except DATABASE_OUTAGES:
            return None  # accepted all the same: the caller answers with the record it has
        finally:
            with self._lock:
                waiters.count -= 1
                if waiters.count == 0:
                    self._waiters.pop(plan_id, None)

    def worker_pids(self) -> list[int]:
        """Process ids of the live workers (for tests and diagnostics)."""
        return [pid for w in self._workers if not w.retiring and (pid := w.process.pid) is not None]

    # -- the dispatcher thread ----------------------------------------------------------------------------

    def _run(self) -> None:
        retries = 0
        while not self._stopping.is_set():
            try:
                self._step()
                retries = 0
            except DATABASE_OUTAGES as exc:
                self._database.failed(exc, "solve dispatcher")
                time.sleep(backoff_s(retries))
                retries += 1
            except Exception:  # noqa: BLE001 - the dispatcher must outlive any one bad step
                log.exception("solve dispatcher step failed; continuing")
                time.sleep(0.5)

    def _step(self) -> None:
        self._spawn_missing()
        self._flush_unrecorded()
        self._dispatch()
        ready = wait_for_connections([*(w.conn for w in self._workers), self._wake_r], self._next_timeout())
        if self._wake_r in ready:
            self._drain_wake()
        for worker in [w for w in self._workers if w.conn in ready]:
            if worker not in self._workers:
                continue  # discarded by an earlier message of this round
            try:
                message = worker.conn.recv()
            except (EOFError, OSError):
                self._on_exit(worker)
                continue
            self._on_message(worker, message)
        self._apply_cancels()
        self._kill_overruns()
        self._sweep()

    def _spawn_missing(self) -> None:
        now = time.monotonic()
        for w in [w for w in self._workers if not w.ready and now - w.started > WORKER_START_TIMEOUT_S]:
            log.error("solve worker %s did not start in %.0f s; replacing it", w.process.pid, WORKER_START_TIMEOUT_S)
            self._discard(w, kill=True)
        active = sum(1 for w in self._workers if not w.retiring)
        if active >= self.size or now < self._next_spawn:
            return
        for _ in range(self.size - active):
            parent_end, child_end = self._context.Pipe()
            process = self._context.Process(
                target=_worker_main,
                args=(child_end, os.getpid(), self._solve),
                name="optsched-solver",
                daemon=True,
            )
            process.start()
            child_end.close()
            self.spawned += 1
            self._workers.append(_Worker(process=process, conn=parent_end, started=now))

    def _dispatch(self) -> None:
        for w in list(self._workers):
            if not w.ready or w.retiring or w.plan_id is not None:
                continue
            record = self._next_claim()
            if record is None:
                return
            time_limit = self.runner.budget_s(record)
            w.plan_id, w.attempt, w.time_limit_s = record.id, record.attempts, time_limit
            w.dispatched = time.monotonic()
            w.deadline = w.dispatched + time_limit + self.grace_s
            try:
                w.conn.send(("solve", record.id, SolveTask.of(record, self.solver_threads)))
            except (BrokenPipeError, OSError):
                self._on_exit(w)

    def _next_claim(self) -> PlanRecord | None:
        while True:
            with self._lock:
                if not self._queue:
                    return None
                plan_id = self._queue.popleft()
            try:
                record = self.store.claim(plan_id)  # None: cancelled meanwhile, or a duplicate entry
            except DATABASE_OUTAGES:
                with self._lock:
                    self._queue.appendleft(plan_id)
                raise
            if record is not None:
                return record

    def _on_message(self, w: _Worker, message: tuple) -> None:
        if message[0] == "ready":
            w.ready = True
            return
        if message[0] == "incumbent":
            _, plan_id, document = message
            if plan_id == w.plan_id:
                try:
                    self.store.record_incumbent(plan_id, w.attempt, document)
                except DATABASE_OUTAGES as exc:  # an incumbent is a bonus: the final answer is kept until written
                    self._database.failed(exc, "recording an incumbent")
            return
        _, plan_id, outcome, payload = message
        if plan_id != w.plan_id:
            return
        self._solve_seconds.append(time.monotonic() - w.dispatched)
        self._unrecorded.append((plan_id, w.attempt, outcome, payload))
        self._next_flush = 0.0
        w.plan_id, w.deadline = None, math.inf
        w.solves += 1
        if w.solves >= self.max_solves_per_worker:
            # Recycle: the worker exits on None; its replacement starts now, the old one is reaped at EOF.
            w.retiring = True
            try:
                w.conn.send(None)
            except OSError:
                self._discard(w, kill=True)

    def _on_exit(self, w: _Worker) -> None:
        """A worker's pipe closed: a recycled worker leaving, or one that died (its plan is retried)."""
        if w.plan_id is not None:
            w.process.join(1.0)
            code = w.process.exitcode
            if w.attempt >= MAX_ATTEMPTS:
                self._finish(
                    w.plan_id,
                    w.attempt,
                    JobState.failed,
                    error=f"the solve worker died {w.attempt} times on this plan (last exit code {code})",
                )
            elif self.store.requeue(w.plan_id, w.attempt):
                log.warning("solve worker died (exit code %s) on plan %s; requeued", code, w.plan_id)
                with self._lock:
                    self._queue.appendleft(w.plan_id)
        elif not w.retiring:
            log.warning("solve worker %s exited while idle (exit code %s)", w.process.pid, w.process.exitcode)
            if not w.ready:
                self._next_spawn = time.monotonic() + 1.0  # do not spin on a worker that cannot start
        w.plan_id = None
        self._discard(w, kill=False)

    def _flush_unrecorded(self) -> None:
        """Write the answers the store has not taken yet, oldest first; while the database does not answer, keep
        them (and retry with backoff): a database outage never costs a solve."""
        if not self._unrecorded or time.monotonic() < self._next_flush:
            return
        while self._unrecorded:
            plan_id, attempt, outcome, payload = self._unrecorded[0]
            try:
                state = record_outcome(self.store, plan_id, attempt, outcome, payload)
            except DATABASE_OUTAGES as exc:
                self._database.failed(exc, f"keeping {len(self._unrecorded)} solve result(s) until it answers")
                self._next_flush = time.monotonic() + backoff_s(self._flush_retries)
                self._flush_retries += 1
                return
            self._unrecorded.pop(0)
            self._database.ok()
            self._flush_retries = 0
            if state is not None:
                self._notify(plan_id)

    def _apply_cancels(self) -> None:
        with self._lock:
            requests, self._cancel_requests = self._cancel_requests, set()
        for w in list(self._workers):
            if w.plan_id is not None and w.plan_id in requests:
                log.info("plan %s cancelled while solving; stopping worker %s", w.plan_id, w.process.pid)
                w.plan_id = None
                self._discard(w, kill=True)

    def _kill_overruns(self) -> None:
        now = time.monotonic()
        for w in list(self._workers):
            if w.plan_id is None or now < w.deadline:
                continue
            log.warning(
                "plan %s overran its %.3g s time limit by %.3g s; killing its worker",
                w.plan_id,
                w.time_limit_s,
                self.grace_s,
            )
            error = overrun_error(w.time_limit_s, self.grace_s)
            if self.store.finish_overrun(w.plan_id, w.attempt, error) is not None:
                self._notify(w.plan_id)
            w.plan_id = None
            self._discard(w, kill=True)

    def _sweep(self) -> None:
        """Adopt plans no process owns: queued but not in our queue, or solving long past any deadline."""
        now = time.monotonic()
        if now < self._next_sweep:
            return
        self._next_sweep = now + SWEEP_INTERVAL_S
        in_flight = {w.plan_id for w in self._workers if w.plan_id is not None}
        in_flight |= {plan_id for plan_id, *_ in self._unrecorded}
        with self._lock:
            known = set(self._queue) | in_flight
        orphans = [pid for pid in self.store.ids_with_state(JobState.queued) if pid not in known]
        cutoff = datetime.now(UTC) - timedelta(seconds=self.grace_s + STALE_CLAIM_SLACK_S)
        for record in self.store.stale_solving(cutoff):
            limit = timedelta(seconds=self.runner.budget_s(record))
            if record.id in in_flight or record.started_at is None or record.started_at > cutoff - limit:
                continue
            if self.store.requeue(record.id, record.attempts):
                orphans.append(record.id)
        if orphans:
            log.warning("adopting %d plan(s) that no process was solving", len(orphans))
            with self._lock:
                self._queue.extend(orphans)

    # -- helpers ------------------------------------------------------------------------------------------

    def _finish(self, plan_id: str, attempt: int, state: JobState, **fields: Any) -> None:
        if self.store.finish(plan_id, attempt, state, **fields):
            self._notify(plan_id)

    def _notify(self, plan_id: str) -> None:
        with self._lock:
            waiters = self._waiters.get(plan_id)
        if waiters is not None:
            waiters.event.set()

    def _discard(self, w: _Worker, *, kill: bool) -> None:
        if kill and w.process.is_alive():
            w.process.kill()
        elif not kill and w.process.is_alive():
            try:
                w.conn.send(None)
            except OSError:
                pass
        w.process.join(2.0)
        if w.process.is_alive():
            w.process.kill()
            w.process.join(2.0)
        w.conn.close()
        if w in self._workers:
            self._workers.remove(w)

    def _next_timeout(self) -> float:
        now = time.monotonic()
        deadlines = [w.deadline for w in self._workers if w.plan_id is not None]
        if self._unrecorded:
            deadlines.append(self._next_flush)
        soonest = min([*deadlines, self._next_sweep, now + 1.0])
        return max(0.0, soonest - now)

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"\0")
        except (BlockingIOError, OSError):
            pass  # the buffer is full: a wake-up is pending anyway

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, OSError):
            pass

    def _retry_after_s(self) -> int:
        """A guess at when a queue slot frees up: the mean recent solve time spread over the workers."""
        mean = sum(self._solve_seconds) / len(self._solve_seconds) if self._solve_seconds else 5.0
        return max(1, min(300, math.ceil(mean / self.size)))


def _worker_main(conn: Connection, parent_pid: int, solve: SolveFunction) -> None:
    """Entry point of a worker process: answer solve requests until told to stop or orphaned."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the server; it stops the workers
    threading.Thread(target=_exit_when_orphaned, args=(parent_pid,), daemon=True).start()
    # Unpickling `solve` (a service-layer function) already imported the planners: the first solve's clock is fair.
    conn.send(("ready",))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        _, plan_id, task = message
        set_incumbent_sink(functools.partial(_send_incumbent, conn, plan_id))
        try:
            outcome, payload = solve(task)
        finally:
            set_incumbent_sink(None)
        try:
            conn.send(("result", plan_id, outcome, payload))
        except (BrokenPipeError, OSError):
            return


def _send_incumbent(conn: Connection, plan_id: str, document: dict[str, Any]) -> None:
    conn.send(("incumbent", plan_id, document))


def _exit_when_orphaned(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(0.5)
    os._exit(0)
