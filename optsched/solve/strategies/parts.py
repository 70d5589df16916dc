"""Large workloads split into parts solved in parallel and merged (optsched.solve.decompose), with a Lagrangian
bound for weighted_speedup (optsched.solve.bound): min_power always, weighted_speedup beyond column generation."""

from __future__ import annotations

import time

from optsched.model.data import ModelData
from optsched.model.objectives import OBJECTIVES, Objective
from optsched.solve.bound import Lagrangian
from optsched.solve.budget import TimeBudget
from optsched.solve.construct import improve
from optsched.solve.decompose import solve_decomposed
from optsched.solve.incumbent import IncumbentTracker
from optsched.solve.options import SolveOptions
from optsched.solve.strategies.base import Report, SolveFn, Strategy, splittable

# Share of the time left that the Lagrangian bound may take before the parts.
BOUND_SHARE = 0.2
# Rounds of parts at most, and the least time left worth another round.
MAX_PART_ROUNDS = 8
MIN_ROUND_S = 2.0


class Parts(Strategy):
    """Rounds of parts while they improve and leave time: each round splits the best plan anew (different parts),
    so that jobs and watts move between what were different parts."""

    name = "parts"

    @classmethod
    def applies(cls, data: ModelData, options: SolveOptions, has_first_plan: bool) -> bool:
        # The max-min couples every job to every other: parts solved apart would each maximise their own minimum.
        return splittable(options, has_first_plan) and not OBJECTIVES[data.workload.objective].fair

    @classmethod
    def create(cls, options: SolveOptions, solve_part: SolveFn) -> Strategy:
        return cls(options, solve_part)

    def __init__(self, options: SolveOptions, solve_part: SolveFn):
        super().__init__(options)
        # The parts are solved with the caller's limits but none of its hooks (they cross to worker processes),
        # each by one MILP: a part left to "auto" under the caller's thresholds could be split again, and a part
        # of one job forever (a chain of forked pools that hung the suite).
        self.sub_options = SolveOptions(
            strategy="direct", part_options=options.part_options, part_workers=options.part_workers
        )
        self.solve_part = solve_part

    def solve(self, data: ModelData, objective: Objective, budget: TimeBudget, tracker: IncumbentTracker) -> Report:
        started = time.monotonic()
        timings: dict[str, float] = {}
        dual = Lagrangian(data) if objective.name == "weighted_speedup" else None
        if dual is not None and tracker.best is not None:
            dual.run(budget.share(BOUND_SHARE).deadline, target=tracker.best_value)
            tracker.improve_bound(dual.best)
            tracker.consider(improve(data, tracker.best, dual.prices()))
        timings["bound"] = time.monotonic() - started
        for round_ in range(MAX_PART_ROUNDS):
            before, first = tracker.best_value, tracker.best
            if first is None:
                break
            timings["parts"] = solve_decomposed(
                data, first, self.solve_part, deadline=budget.deadline, mip_gap=tracker.gap, options=self.sub_options,
                round_=round_, consider=tracker.consider,
            )
            timings["rounds"] = round_ + 1
            if tracker.best_value == before or budget.remaining() < MIN_ROUND_S:
                break
        if dual is not None and not budget.expired():
            dual.run(budget.deadline, target=tracker.best_value)
            tracker.improve_bound(dual.best)
        return Report(timings)
