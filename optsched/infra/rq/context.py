"""What every process of `optsched worker` (pool, worker, horse) shares: the `WorkerContext`, set by `configure`
in the pool process and inherited through fork."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from optsched.infra.queue import Runner
from optsched.infra.rq.keys import DEFAULT_QUEUE_NAME, Keys
from optsched.infra.rq.lease import DEFAULT_LEASE_S
from optsched.infra.rq.queue import DEFAULT_GRACE_S
from optsched.infra.store import PlanStore

# A horse retries writing a finished solve's answer this long while the database does not answer, then spools it
# (kept below RQ's 60 s of slack past the job timeout, after which the worker kills its horse).
DEFAULT_RESULT_RETRY_S = 30.0
MAX_RESULT_RETRY_S = 50.0
DEFAULT_SPOOL_DIR = "var/spool"


class Sightings:
    """When (monotonic s) this process first saw each of some things in a doubtful state, so that it acts on one
    only when a later look finds it still so, a whole period on, and never on a single look."""

    def __init__(self) -> None:
        self._first: dict[str, float] = {}

    def seen_for(self, key: str, now: float) -> float:
        """Seconds since `key` was first seen (0 now, at the first sighting)."""
        return now - self._first.setdefault(key, now)

    def forget(self, key: str) -> None:
        self._first.pop(key, None)

    def keep_only(self, keys: set[str]) -> None:
        """Forget what was not seen this time (it moved on: a later sighting starts a new count)."""
        for key in [k for k in self._first if k not in keys]:
            del self._first[key]


@dataclass
class WorkerContext:
    """What every worker process (pool, worker, horse) of `optsched worker` shares; inherited through fork."""

    store: PlanStore
    keys: Keys
    runner: Runner
    grace_s: float = DEFAULT_GRACE_S
    lease_s: float = DEFAULT_LEASE_S
    solver_threads: int | None = 1
    spool_dir: Path = Path(DEFAULT_SPOOL_DIR)
    result_retry_s: float = DEFAULT_RESULT_RETRY_S
    result_ttl_s: float | None = None  # retention (optsched.infra.retention): None keeps every result
    pricing_fan_out: bool = True  # large solves' pricing rounds go to the workers too (optsched.infra.rq.pricing)
    # The sweep's memory (in the pool process): claims seen solving without a lease, and RQ jobs seen taken off the
    # queue by a worker while their row stayed queued (optsched.infra.rq.sweep).
    unleased: Sightings = field(default_factory=Sightings)
    in_flight: Sightings = field(default_factory=Sightings)


_context: WorkerContext | None = None


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
    result_ttl_s: float | None = None,
    pricing_fan_out: bool = True,
) -> WorkerContext:
    """Set the context solve jobs run with in this process and the processes it forks (`result_retry_s` is capped
    at MAX_RESULT_RETRY_S)."""
    global _context
    _context = WorkerContext(store, Keys(url, queue_name), runner, grace_s, lease_s, solver_threads,
                             Path(spool_dir), min(max(0.0, result_retry_s), MAX_RESULT_RETRY_S), result_ttl_s,
                             pricing_fan_out=pricing_fan_out)
    return _context


def _after_fork_in_child() -> None:
    """A forked worker or horse must not share the parent's database connections: it opens its own."""
    if _context is not None:
        _context.store.engine.dispose(close=False)


os.register_at_fork(after_in_child=_after_fork_in_child)


def require_context() -> WorkerContext:
    if _context is None:
        raise RuntimeError("optsched solve jobs run in `optsched worker` (or after optsched.infra.rq.configure)")
    return _context
