"""The solve queue's contract: plans go in by id, some workers solve them, results go to the store.

A queued row is a job of one resource kind (its `kind` names one of optsched.service.kinds).
A queue only sees ids; a worker turns a claimed row into a `SolveTask`, and the `Runner` the service layer gives
the queue runs it (optsched.service.kinds: each kind's Python API, the same calls the CLI makes).

`SolveQueue` is what the service programs against; two queues satisfy it: the in-server process pool
(optsched.infra.pool.ProcessPool) and RQ workers on any machine (optsched.infra.rq.RQQueue). Both record a
solve's answer with `record_outcome`, and a running solve reports its improved plans with `report_incumbent`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from optsched.infra.store import DATABASE_OUTAGES, JobState, PlanRecord, PlanStore
from optsched.schema.errors import OptschedError


@dataclass(frozen=True)
class SolveTask:
    """What a worker needs to solve one row: its kind, input document, keyword arguments and HiGHS threads."""

    kind: str
    workload: dict[str, Any]
    params: dict[str, Any] = field(default_factory=dict)
    threads: int | None = None

    @classmethod
    def of(cls, record: PlanRecord, threads: int | None) -> SolveTask:
        return cls(kind=record.kind, workload=record.workload or {}, params=dict(record.params or {}), threads=threads)


# A solve function runs in a worker process: ("result", (state, document)), ("invalid", field errors) or
# ("error", message). `solve_task` is the real one; tests pass stand-ins.
SolveFunction = Callable[[SolveTask], tuple[str, Any]]


@dataclass(frozen=True)
class Runner:
    """What a queue runs, given by the service layer (optsched.service.kinds.RUNNER): `solve` in a worker process
    (a module-level function, so a spawned worker imports it by name) and `budget_s(record)`, the wall time a
    solve may take before it is stopped (plus the grace period)."""

    solve: SolveFunction
    budget_s: Callable[[PlanRecord], float]


class QueueFull(OptschedError):
    """The solve queue holds as many plans as it may; retry after `retry_after_s` seconds."""

    def __init__(self, size: int, retry_after_s: int):
        self.size = size
        self.retry_after_s = retry_after_s
        super().__init__(f"the solve queue is full ({size} plans waiting); retry in {retry_after_s} s")


class SolveQueue(Protocol):
    """What the service needs from a solve queue; implementations differ in where the solves run."""

    def start(self) -> None:
        """Start solving, first requeueing the plans a previous run left queued or solving."""

    def stop(self) -> None:
        """Stop solving; plans in flight go back to queued so the next start solves them."""

    def submit(self, plan_id: str) -> None:
        """Queue a stored, queued plan; raises QueueFull when the queue is at its bound."""

    def cancel(self, plan_id: str) -> PlanRecord | None:
        """Mark a queued or solving plan cancelled and stop its solve; the record as it now is (None: unknown)."""

    def depth(self) -> int:
        """Plans waiting for a worker."""

    def worker_count(self) -> int:
        """Worker processes that take solves from this queue (0: the plans wait for one)."""

    def healthy(self) -> bool:
        """Whether solves are being taken from the queue."""

    def unready_reason(self) -> str | None:
        """Why solves are not being taken (for /readyz), naming the dependency that fails; None when they are."""

    def wait(self, plan_id: str, timeout_s: float) -> PlanRecord | None:
        """The record once final or after `timeout_s`, whichever comes first. While the database does not answer
        it returns the last record it read (None if none): the plan was accepted, and a wait must not turn that
        into an error."""


def poll_until_final(store: PlanStore, plan_id: str, timeout_s: float) -> PlanRecord | None:
    """`SolveQueue.wait` for a queue that hears of no answer itself: polls the store, waiting out an outage of the
    database until `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    record = None
    while True:
        try:
            record = store.get(plan_id)
            if record is None or record.status.final:
                return record
        except DATABASE_OUTAGES:
            pass
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return record
        time.sleep(min(0.05, remaining))


# Where a solve in this process sends each improved plan while it runs: set by the queue around each task
# (the process pool's worker sends it to the dispatcher, an RQ horse writes it to the store).
_incumbent_sink: Callable[[dict[str, Any]], None] | None = None


def report_incumbent(document: dict[str, Any]) -> None:
    """A running solve's best plan so far (a plan document); recorded on its row while it is still solving."""
    if _incumbent_sink is not None:
        _incumbent_sink(document)


def set_incumbent_sink(sink: Callable[[dict[str, Any]], None] | None) -> None:
    global _incumbent_sink
    _incumbent_sink = sink


def overrun_error(limit_s: float, grace_s: float) -> str:
    """The error recorded for a solve stopped after overrunning its time limit by more than the grace period."""
    return (f"the solve overran its time limit of {limit_s:g} s by more than the {grace_s:g} s grace period "
            "and was stopped")


def record_outcome(store: PlanStore, plan_id: str, attempt: int, outcome: str, payload: Any) -> JobState | None:
    """Write a solve answer onto the claim `attempt`; the state written, or None when the claim was no longer
    current (cancelled, or requeued and claimed again). The one place both queues record outcomes."""
    fields: dict[str, Any]
    if outcome == "result":
        verdict, document = payload
        state, fields = JobState.finished, {"verdict": verdict, "plan": document}
    elif outcome == "invalid":
        details = "; ".join(f"{e['path'] or '<document>'}: {e['message']}" for e in payload)
        state, fields = JobState.failed, {"error": f"invalid workload: {details}"}
    else:
        state, fields = JobState.failed, {"error": str(payload)}
    return state if store.finish(plan_id, attempt, state, **fields) else None
