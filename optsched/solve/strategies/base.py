"""The one interface every search strategy implements (style rule 18; Pyomo's SolverBase, FlexMeasures'
Scheduler.compute()): `solve` runs within a time budget and hands every plan and bound to the tracker."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from optsched.model.data import ModelData
from optsched.model.objectives import Objective
from optsched.schema.plan import Plan
from optsched.solve.budget import TimeBudget
from optsched.solve.incumbent import IncumbentTracker
from optsched.solve.options import SolveOptions, StrategyName

# The planner's solve_workload as the parts strategy calls it on each part (passed in: strategies sit below it).
SolveFn = Callable[..., Plan]


@dataclass(frozen=True)
class Report:
    """What a strategy spent its time on: `timings` (its own phases, merged into the plan's timings), and the
    seconds of building the model, handing it to the solver and inside HiGHS (0 when it builds none)."""

    timings: Mapping[str, float] = field(default_factory=dict)
    build_s: float = 0.0
    handoff_s: float = 0.0
    highs_s: float = 0.0


class Strategy(ABC):
    """One way to search for plans. The tracker starts with the first plan (when there is one); whatever the
    strategy cannot improve in time stays the answer (the fallback)."""

    name: ClassVar[StrategyName]

    def __init__(self, options: SolveOptions):
        self.options = options

    @classmethod
    def applies(cls, data: ModelData, options: SolveOptions, has_first_plan: bool) -> bool:
        """Whether this strategy can solve the workload with these options (it then may be forced)."""
        return True

    @classmethod
    def create(cls, options: SolveOptions, solve_part: SolveFn) -> Strategy:
        """The strategy for these options (`solve_part` is for strategies that solve parts of the workload)."""
        return cls(options)

    @abstractmethod
    def solve(self, data: ModelData, objective: Objective, budget: TimeBudget, tracker: IncumbentTracker) -> Report:
        """Search until `budget` runs out or the tracker's plan is proven; plans and bounds go to `tracker`."""


def splittable(options: SolveOptions, has_first_plan: bool) -> bool:
    """Columns and parts start from the first plan and know only the workload's own rows and terms, on HiGHS."""
    plain = options.extra_functionality is None and options.extra_objective is None and options.backend == "highs"
    return has_first_plan and plain
