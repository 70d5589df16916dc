"""The fairness objectives' solves (max_min_speedup, team_max_min; docs/guides/fairness.md).

1. S_j^solo: each job alone on the fleet, under the same budgets, its own min/max_devices and the caps, no
   deadline: one small MILP per distinct kind of job (jobs alike in every field that bounds their speedup share
   one), or the fastest eligible devices when no budget can bind.
2. The max-min: max z with z <= each member's normalised speedup (optsched.model.constraints.add_fairness), every
   job admitted. Its bound is the plan's bound.
3. Among the plans whose fairness is at least (1 - FAIRNESS_TOLERANCE) x the max-min plan's, the most weighted
   speedup, warm-started from the max-min plan (which keeps the floor, so the second solve never ends worse).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from optsched.model.data import ModelData
from optsched.model.objectives import fairness_value
from optsched.schema.plan import Plan, Status
from optsched.schema.tolerances import FAIRNESS_TOLERANCE
from optsched.schema.workload import Job, Priority, Workload
from optsched.solve.extract import relative_gap
from optsched.solve.options import SolveOptions, WarmStart

log = logging.getLogger(__name__)

SolveData = Callable[[ModelData, SolveOptions, float], Plan]

# Shares of the time limit: the solo problems, then the max-min solve (of what is left); the second solve has
# the rest. The solo problems are tiny (one job), the max-min proves in about the time of a weighted solve.
SOLO_SHARE = 0.2
FIRST_SHARE = 0.5
# A solo problem gets at least this long, whatever the limit (HiGHS's own set-up takes milliseconds).
MIN_SOLO_S = 0.05
# A solo problem may take this many times its even share of the time left: most prove in a fraction of it, and
# an even split left one M job in ten unproven (its share 0.08 s of the 30 s limit's 6 s; 2 s did all 76).
SOLO_SLACK = 4.0
# Relative gap of the solo problems: normalisers within 0.01 % of the optimum, which one-job MILPs prove at once
# (1e-6 ran out of time on about one M job in three on the shared machine).
SOLO_GAP = 1e-4

NIGHT_SUGGESTION = (
    "{objective} admits every job at once and not every job fits with the others: plan the queue over time with "
    "the night planner (optsched night, plan_night), which shares the fleet between the jobs by turns, or use "
    "weighted_speedup, which may leave jobs out"
)


def solve_fair(workload: Workload, options: SolveOptions, started: float, solve_data: SolveData) -> Plan:
    """The plan of a fairness objective (module docstring); `solve_data` is the planner's solve of one model."""
    time_limit = workload.options.time_limit_s if options.time_limit_s is None else options.time_limit_s
    deadline = started + time_limit
    plain = options.replace(on_incumbent=None, progress=None, warm_start=None, extra_objective=None)
    solo, warnings = solo_speedups(workload, plain, started + SOLO_SHARE * time_limit, solve_data)
    solo_seconds = time.monotonic() - started
    first_data = ModelData(workload, solo=solo)
    first_limit = max(MIN_SOLO_S, FIRST_SHARE * (deadline - time.monotonic()))
    # A caller's extra terms (re-planning's move cost) are in weighted-speedup units: the second solve's, and so
    # is then the `progress` the caller reads (solve_workload: the objective plus those terms).
    extra = options.extra_objective
    first = solve_data(
        first_data,
        options.replace(time_limit_s=first_limit, extra_objective=None, progress=None if extra else options.progress),
        time.monotonic(),
    )
    if first.status is Status.infeasible:
        reason = NIGHT_SUGGESTION.format(objective=workload.objective)
        return first.model_copy(update={
            "diagnosis": (*first.diagnosis, reason), "solve_seconds": time.monotonic() - started,
        })
    if not first.feasible or first.fairness is None:
        return first.model_copy(update={"solve_seconds": time.monotonic() - started})
    floor = (1 - FAIRNESS_TOLERANCE) * first.fairness
    second_data = ModelData(workload, solo=solo, fairness_floor=floor)
    bound = first.bound

    def on_incumbent(plan: Plan) -> None:
        if options.on_incumbent is not None:
            options.on_incumbent(_reported(second_data, plan, bound))

    second = solve_data(
        second_data,
        # Without extra terms `progress` speaks in fairness units: the second solve's weighted speedups would read
        # as a jump.
        options.replace(
            time_limit_s=max(MIN_SOLO_S, deadline - time.monotonic()), warm_start=allocations(first),
            on_incumbent=on_incumbent if options.on_incumbent is not None else None,
            progress=options.progress if extra else None,
        ),
        time.monotonic(),
    )
    kept_floor = second.feasible and second.fairness is not None and second.fairness >= floor * (1 - 1e-9)
    chosen = second if kept_floor else first
    if not kept_floor:
        warnings.append(f"the second solve found no plan within {FAIRNESS_TOLERANCE:.0%} of the max-min in time: "
                        "the max-min plan stands, its weighted speedup not maximised")
    proven = first.status is Status.optimal and kept_floor and second.status is Status.optimal
    if first.status is Status.optimal and not proven:
        warnings.append("the max-min is proven; the weighted speedup among the plans within the tolerance is not")
    timings = {**chosen.timings, "solo": solo_seconds}
    plan = _reported(second_data, chosen, bound)
    return plan.model_copy(update={
        "status": Status.optimal if proven else Status.time_limit,
        "warnings": (*chosen.warnings, *warnings),
        "rounds": first.rounds + (second.rounds if second is chosen else 0),
        "timings": timings,
        "solve_seconds": time.monotonic() - started,
    })


def _reported(data: ModelData, plan: Plan, bound: float | None) -> Plan:
    """`plan` reporting the fairness value as its objective, bounded by the max-min solve's bound."""
    value = fairness_value(data, [p.speedup for p in plan.placements])
    top = None if bound is None else max(bound, value)
    return plan.model_copy(update={
        "objective": value, "fairness": value, "bound": top, "gap": None if top is None else relative_gap(value, top),
    })


def allocations(plan: Plan) -> WarmStart:
    """A plan's allocations as a warm start: job id -> {(device id, cap_w): count}."""
    return {p.job: {(a.device, a.cap_w): a.count for a in p.allocations} for p in plan.placements if p.admitted}


def solo_workload(workload: Workload, job: Job) -> Workload:
    """`job` alone on the fleet under the workload's budgets: no deadline, no team, weighted_speedup."""
    alone = job.model_copy(update={"deadline_hours": None, "priority": Priority.normal, "weight": 1.0, "team": None})
    return Workload.model_construct(
        name=f"{workload.name}/solo/{job.id}", devices=workload.devices, jobs=(alone,), power=workload.power,
        objective="weighted_speedup", teams={}, options=workload.options,
    )


def _speedup_key(job: Job) -> tuple[object, ...]:
    """The fields that bound a job's speedup alone (work, deadline, priority and weight do not)."""
    return (
        job.parallel_fraction, job.min_devices, job.max_devices, job.memory_gb, job.allowed_models,
        tuple(sorted(job.speed_on.items())),
    )


def solo_speedups(
    workload: Workload, options: SolveOptions, deadline: float, solve_data: SolveData
) -> tuple[tuple[float, ...], list[str]]:
    """(S_j^solo per job, warnings for the solo problems not proven optimal by `deadline`)."""
    data = ModelData(workload)
    if not _budgets_can_bind(data):
        # Every device at its fastest level fits every budget: the fastest eligible devices are the optimum.
        return tuple(data.best_speedup(j) for j in range(len(data.jobs))), []
    known: dict[tuple[object, ...], float] = {}
    warnings: list[str] = []
    distinct = len({_speedup_key(job) for job in workload.jobs})
    for job in workload.jobs:
        key = _speedup_key(job)
        if key in known:
            continue
        left = deadline - time.monotonic()
        limit = min(max(MIN_SOLO_S, left), max(MIN_SOLO_S, SOLO_SLACK * left / max(1, distinct - len(known))))
        solo = solve_data(
            ModelData(solo_workload(workload, job)), options.replace(time_limit_s=limit, mip_gap=SOLO_GAP),
            time.monotonic(),
        )
        known[key] = solo.placements[0].speedup if solo.feasible else 0.0
        if solo.status is not Status.optimal and solo.feasible:
            warnings.append(f"job {job.id!r}: its solo speedup {known[key]:.4g} is not proven optimal in time "
                            f"({solo.status.value}); normalised speedups may read high")
    log.debug("workload %r: %d solo problems", workload.name, len(known))
    return tuple(known[_speedup_key(job)] for job in workload.jobs), warnings


def _budgets_can_bind(data: ModelData) -> bool:
    """Some budget is below the draw of its devices all at their highest cap."""
    power = data.workload.power
    if power.budget_w is not None and power.budget_w < data.peak_power_w:
        return True
    for domain, limit in power.domains.items():
        peak = sum(max(lv.cap_w for lv in g.power_levels) * g.count for g in data.groups if g.domain == domain)
        if limit < peak:
            return True
    return False

