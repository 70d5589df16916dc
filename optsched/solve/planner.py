"""The solve loop: validate, make a first plan, let the strategy chosen for the workload search
(optsched.solve.strategies), extract an exact plan (optsched.plan adds the suggestions an infeasible plan
carries; see optsched.explain.planning)."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from optsched.model.data import ModelData
from optsched.model.objectives import OBJECTIVES
from optsched.schema.plan import Plan, Status
from optsched.schema.workload import Workload, workload_warnings
from optsched.solve.budget import TimeBudget
from optsched.solve.construct import construct
from optsched.solve.diagnosis import diagnose_infeasible, precheck
from optsched.solve.extract import empty_plan, extract, power
from optsched.solve.fairness import solve_fair
from optsched.solve.incumbent import IncumbentTracker, trivial_bound
from optsched.solve.options import SolveOptions
from optsched.solve.strategies import choose_strategy

# Seconds per job an extraction is assumed to take before one has been timed (measured: about 0.1 ms at XL).
EXTRACT_S_PER_JOB = 2e-4
DEFAULT_OPTIONS = SolveOptions()

log = logging.getLogger(__name__)

WorkloadSource = Workload | Mapping[str, Any] | str | Path


def solve_workload(
    source: WorkloadSource,
    options: SolveOptions = DEFAULT_OPTIONS,
) -> Plan:
    """Solve a workload (object, dict, JSON path or JSON text). Raises InvalidWorkload; never mutates the input.

    An infeasible result carries the diagnosis but no suggestions (those cost an elastic MILP: optsched.plan).

    `options` (optsched.solve.options.SolveOptions) says how: limits, backend, strategy, warm start, hooks.
    `warm_start` maps job id -> {(device id, cap_w): count}, e.g. a baseline's allocations.
    `progress(seconds, incumbent, bound)` is called whenever the best plan or the bound improves.
    `extra_objective` adds terms to the objective (optsched.replan's move cost): plans are then ranked, bounded and
    proven on the objective plus those terms, which `progress` reports, while the plan's `objective` stays the
    workload's own (its `bound` is clamped to it).
    `on_incumbent(plan)` receives each improved plan while solving, fully extracted, with status `time_limit` and
    the bound and gap known then; at most one every INCUMBENT_INTERVAL_S of optsched.solve.incumbent (longer when
    extracting costs more), and always the last one before the call returns. The first comes from the constructive
    heuristic (optsched.solve.construct), in seconds at any size.

    The time limit holds for the whole call: every phase gets what is left, HiGHS is stopped at the deadline (and
    abandoned if it ignores the interrupt), and the best plan found so far comes back with status `time_limit`.
    """
    started = time.monotonic()
    workload = Workload.load(source)
    if OBJECTIVES[workload.objective].fair:
        return solve_fair(workload, options, started, solve_data)
    return solve_data(ModelData(workload), options, started)


def solve_data(data: ModelData, options: SolveOptions, started: float) -> Plan:
    """solve_workload on a workload's model data (a fairness solve passes its solo speedups and floor in it);
    `started` is when the call began (time.monotonic())."""
    workload = data.workload
    validated = time.monotonic()
    time_limit = workload.options.time_limit_s if options.time_limit_s is None else options.time_limit_s
    gap = workload.options.mip_gap if options.mip_gap is None else options.mip_gap
    warnings = tuple(workload_warnings(workload))

    reasons = precheck(data)
    if reasons:
        return _infeasible(data, reasons, warnings, started, 0)
    objective = OBJECTIVES[workload.objective]
    if not data.arrays.eligible.any():
        # Nothing can run anywhere and precheck found no must-run job: the empty plan is the only plan.
        value = objective.value(data, [0.0] * len(data.jobs), power(data, {}))
        return extract(data, objective, {}, Status.optimal, value, warnings, started, rounds=0)

    budget = TimeBudget(started + time_limit)
    tracker = IncumbentTracker(
        data, objective, gap, started=started, warnings=warnings, extra=options.extra_objective,
        progress=options.progress, on_incumbent=options.on_incumbent,
    )
    timings = {"validate": validated - started}
    if options.extra_functionality is None:
        # A first plan before any model exists (rows added by extra_functionality are invisible to heuristics).
        tracker.consider(construct(data))
        timings["first_plan"] = time.monotonic() - validated
    # The final extraction needs time too: keep what the first one took (or an estimate) in reserve.
    budget = budget.keep_back(min(0.1 * time_limit, max(tracker.extract_seconds, EXTRACT_S_PER_JOB * len(data.jobs))))
    searched = time.monotonic()
    strategy = choose_strategy(
        data, options, has_first_plan=tracker.best is not None, budget=budget, solve_part=solve_workload
    )
    log.debug("workload %r: strategy %s", workload.name, strategy.name)
    report = strategy.solve(data, objective, budget, tracker)
    solved = time.monotonic()
    timings.update(report.timings)
    timings.update({
        "build": searched - validated - timings.get("first_plan", 0.0) + report.build_s,
        "handoff": report.handoff_s,
        "solve": solved - searched - report.build_s - report.handoff_s,
        "highs": report.highs_s,
    })
    if tracker.bound is None and tracker.best is not None:
        tracker.improve_bound(trivial_bound(data, objective))

    if tracker.infeasible:
        return _infeasible(data, diagnose_infeasible(data), warnings, started, tracker.rounds)
    if tracker.best is None:
        empty = empty_plan(data, Status.no_solution, (), warnings, started, tracker.rounds)
        return empty.model_copy(update={"timings": timings, "bound": tracker.bound})
    status = Status.optimal if tracker.proven else Status.time_limit
    plan = extract(data, objective, tracker.best, status, tracker.bound, warnings, started, tracker.rounds)
    timings["extract"] = time.monotonic() - solved
    plan = plan.model_copy(update={"timings": timings, "solve_seconds": time.monotonic() - started})
    tracker.publish_final(plan)
    return plan


def _infeasible(data: ModelData, reasons, warnings, started: float, rounds: int) -> Plan:
    plan = empty_plan(data, Status.infeasible, tuple(reasons), warnings, started, rounds)
    return plan.model_copy(update={"solve_seconds": time.monotonic() - started})
