"""`optsched.plan`: the solve loop, and for an infeasible workload the smallest changes that would make it
feasible (the elastic MILP of optsched.explain.suggestions)."""

from __future__ import annotations

import time

from optsched.explain.suggestions import suggest_changes
from optsched.model.constraints import ExtraFunctionality
from optsched.model.objectives import OBJECTIVES
from optsched.schema.plan import Plan, Status, Suggestion
from optsched.schema.workload import Workload
from optsched.solve.options import OnIncumbent, Progress, SolveOptions, WarmStart
from optsched.solve.planner import WorkloadSource, solve_workload

# The elastic MILP behind the suggestions of an infeasible plan gets at most this long.
SUGGESTION_TIME_LIMIT_S = 20.0


def plan(
    source: WorkloadSource,
    *,
    time_limit_s: float | None = None,
    mip_gap: float | None = None,
    threads: int | None = None,
    backend: str | None = None,
    extra_functionality: ExtraFunctionality | None = None,
    warm_start: WarmStart | None = None,
    progress: Progress | None = None,
    on_incumbent: OnIncumbent | None = None,
    options: SolveOptions | None = None,
) -> Plan:
    """Plan a workload (object, dict, JSON path or JSON text). Raises InvalidWorkload; never mutates the input.

    The keyword arguments are the fields of optsched.SolveOptions (pass `options=` to reuse one object):
    `backend` is "highs" (the matrix straight to highspy) or "pyomo" (Pyomo's persistent interface); both build
    the same rows. `warm_start` maps job id -> {(device id, cap_w): count}, e.g. a baseline's allocations.
    `progress(seconds, incumbent, bound)` is called whenever the best plan or the bound improves;
    `on_incumbent(plan)` receives improved plans while solving (status `time_limit`, with bound and gap; at most one
    every 0.5 s, and always the last; see optsched.solve.planner.solve_workload). An infeasible
    plan carries `diagnosis` (why) and `suggestions` (what to change).
    """
    started = time.monotonic()
    workload = Workload.load(source)
    settings = (options or SolveOptions()).replace(**{
        name: value for name, value in {
            "time_limit_s": time_limit_s, "mip_gap": mip_gap, "threads": threads, "backend": backend,
            "extra_functionality": extra_functionality, "warm_start": warm_start, "progress": progress,
            "on_incumbent": on_incumbent,
        }.items() if value is not None
    })
    result = solve_workload(workload, settings)
    if result.status is not Status.infeasible:
        return result
    time_limit = workload.options.time_limit_s if settings.time_limit_s is None else settings.time_limit_s
    changes = suggest_changes(workload, time_limit_s=max(1.0, min(SUGGESTION_TIME_LIMIT_S, time_limit)))
    if OBJECTIVES[workload.objective].fair:
        changes.append(Suggestion(
            kind="plan_night", target="", current=workload.objective, needed=None,
            message=f"not every job fits at once, which {workload.objective} needs: plan the queue over time with "
            "the night planner (optsched night, plan_night), which shares the fleet between the jobs by turns",
        ))
    return result.model_copy(update={"suggestions": tuple(changes), "solve_seconds": time.monotonic() - started})
