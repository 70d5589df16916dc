"""Stand-in solve functions for the worker pool tests (importable by the spawned worker processes)."""

from __future__ import annotations

import os
import time
from typing import Any

from optsched.infra.queue import SolveTask


def sleep_forever(task: SolveTask) -> tuple[str, Any]:
    """A solve that never returns: the pool must kill it after its time limit plus grace."""
    time.sleep(3600)
    return "error", "unreachable"


def crash(task: SolveTask) -> tuple[str, Any]:
    """A solve that takes its worker process down (think of an out-of-memory kill)."""
    os._exit(3)


def incumbent_then_sleep(task: SolveTask) -> tuple[str, Any]:
    """A solve that finds a real plan, reports it as its incumbent, then never finishes (a hard MILP's proof)."""
    import optsched
    from optsched.infra.queue import report_incumbent

    best = optsched.plan(task.workload)
    report_incumbent({**best.model_dump(mode="json"), "status": "time_limit"})
    time.sleep(3600)
    return "error", "unreachable"
