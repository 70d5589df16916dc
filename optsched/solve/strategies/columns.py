"""Column generation over whole job allocations (optsched.solve.columns) for large weighted_speedup workloads:
its master has a row per job, group and budget whatever the number of placement options."""

from __future__ import annotations

from optsched.model.data import ModelData
from optsched.model.objectives import Objective
from optsched.solve.budget import TimeBudget
from optsched.solve.columns import Controls, solve_by_columns
from optsched.solve.columns.fanout import pricing_fan_out
from optsched.solve.extract import Counts
from optsched.solve.incumbent import IncumbentTracker
from optsched.solve.options import SolveOptions
from optsched.solve.strategies.base import Report, Strategy, splittable


class ColumnGeneration(Strategy):
    """Starts from the tracker's first plan; its bound is the Lagrangian one at the master's duals."""

    name = "columns"

    @classmethod
    def applies(cls, data: ModelData, options: SolveOptions, has_first_plan: bool) -> bool:
        return splittable(options, has_first_plan) and data.workload.objective == "weighted_speedup"

    def solve(self, data: ModelData, objective: Objective, budget: TimeBudget, tracker: IncumbentTracker) -> Report:
        def best() -> tuple[Counts, float]:
            if tracker.best is None or tracker.best_value is None:
                raise ValueError("column generation starts from a first plan")
            return tracker.best, tracker.best_value

        controls = Controls(
            workers=self.options.pricing_workers, fan_out=pricing_fan_out(), threads=self.options.pricing_threads,
            shrink=self.options.shrink_columns, hosts=self.options.pricing_hosts or None,
        )
        stats = solve_by_columns(
            data, best=best, budget=budget, gap=tracker.gap, threads=self.options.threads, consider=tracker.consider,
            on_bound=tracker.improve_bound, controls=controls,
        )
        tracker.proven = tracker.within_gap()
        return Report({"bound": stats.pricing_s, "columns": stats.mip_s, "column_rounds": stats.rounds})
