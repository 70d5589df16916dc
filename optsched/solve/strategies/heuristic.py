"""No model at all: the first plan re-placed along the Lagrangian prices, with the Lagrangian bound (or the
trivial one) for its gap. For workloads whose model could not even be built in the time left."""

from __future__ import annotations

import time

from optsched.model.data import ModelData
from optsched.model.objectives import Objective
from optsched.solve.bound import Lagrangian
from optsched.solve.budget import TimeBudget
from optsched.solve.construct import improve
from optsched.solve.incumbent import IncumbentTracker
from optsched.solve.options import SolveOptions
from optsched.solve.strategies.base import Report, Strategy

# Share of the time left that the Lagrangian bound may take before the re-placement.
BOUND_SHARE = 0.5


class HeuristicOnly(Strategy):
    """The bound only for weighted_speedup without extra terms (the Lagrangian knows only the workload's own)."""

    name = "heuristic"

    @classmethod
    def applies(cls, data: ModelData, options: SolveOptions, has_first_plan: bool) -> bool:
        # The heuristics cannot see rows added by extra_functionality.
        return has_first_plan and options.extra_functionality is None

    def solve(self, data: ModelData, objective: Objective, budget: TimeBudget, tracker: IncumbentTracker) -> Report:
        started = time.monotonic()
        if self.options.extra_objective is None and objective.name == "weighted_speedup" and tracker.best is not None:
            dual = Lagrangian(data)
            dual.run(budget.share(BOUND_SHARE).deadline, target=tracker.best_value)
            tracker.improve_bound(dual.best)
            if not budget.expired():
                tracker.consider(improve(data, tracker.best, dual.prices()))
        return Report({"bound": time.monotonic() - started})
