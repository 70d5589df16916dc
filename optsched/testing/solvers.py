"""Solve functions for the solver pool in the reliability tests (importable by its spawned worker processes)."""

from __future__ import annotations

import dataclasses
from typing import Any

from optsched.infra.queue import SolveTask
from optsched.service.kinds import solve_task

# HiGHS is told this many times the workload's own time limit: as if it ignored its limit.
IGNORED_LIMIT_FACTOR = 100


def ignore_time_limit(task: SolveTask) -> tuple[str, Any]:
    """The real solve, but with HiGHS given 100x the time limit the pool enforces (the workload's)."""
    options = dict(task.workload.get("options") or {})
    options["time_limit_s"] = IGNORED_LIMIT_FACTOR * float(options.get("time_limit_s", 30))
    return solve_task(dataclasses.replace(task, workload={**task.workload, "options": options}))
