"""The solve queue a service runs on, chosen by its settings: the embedded process pool, or RQ workers when
QUEUE_URL is set. The REST app and `optsched batch` open theirs here, both with the kinds' runner."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from optsched.infra.pool import ProcessPool
from optsched.infra.queue import SolveQueue
from optsched.infra.rq.queue import RQQueue
from optsched.infra.store import PlanStore
from optsched.service.kinds import RUNNER


def open_queue(store: PlanStore, settings: Mapping[str, Any], **overrides: Any) -> SolveQueue:
    """RQQueue on settings["QUEUE_URL"] if set, else a ProcessPool; `overrides` replace settings by name."""
    s = {**settings, **overrides}
    return open_rq_queue(store, s) if s["QUEUE_URL"] else open_pool(store, s)


def open_rq_queue(store: PlanStore, settings: Mapping[str, Any]) -> RQQueue:
    """The RQ queue on settings["QUEUE_URL"]: solves run on `optsched worker` processes."""
    s = settings
    return RQQueue(store, s["QUEUE_URL"], runner=RUNNER, queue_name=s["QUEUE_NAME"], queue_size=s["QUEUE_SIZE"],
                   grace_s=s["SOLVE_GRACE_S"])


def open_pool(store: PlanStore, settings: Mapping[str, Any]) -> ProcessPool:
    """The embedded process pool: solves run in worker processes of this one."""
    s = settings
    return ProcessPool(
        store,
        runner=RUNNER,
        workers=s["WORKERS"],
        queue_size=s["QUEUE_SIZE"],
        max_solves_per_worker=s["MAX_SOLVES_PER_WORKER"],
        grace_s=s["SOLVE_GRACE_S"],
        solver_threads=s["SOLVER_THREADS"],
    )
