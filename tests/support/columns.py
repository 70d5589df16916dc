"""Column generation run as the planner runs it, from the first plan, keeping every plan and bound it reports."""

from __future__ import annotations

from optsched import Workload
from optsched.model.data import ModelData
from optsched.solve.budget import TimeBudget
from optsched.solve.columns import ColumnStats, Controls, solve_by_columns
from optsched.solve.construct import construct
from optsched.solve.extract import Counts, exact_speedups, weighted


def run_columns(
    w: Workload, controls: Controls, gap: float = 1e-4, seconds: float = 120.0
) -> tuple[ModelData, ColumnStats, list[Counts], list[float], float]:
    """(data, stats, every plan considered, every bound reported, the best plan's value)."""
    data = ModelData(w)
    first = construct(data)
    best = {"counts": first, "value": weighted(data, exact_speedups(data, first))}
    plans: list[Counts] = [first]
    bounds: list[float] = []

    def consider(counts: Counts) -> None:
        plans.append(counts)
        value = weighted(data, exact_speedups(data, counts))
        if value > best["value"]:
            best.update(counts=counts, value=value)

    stats = solve_by_columns(
        data, best=lambda: (best["counts"], best["value"]), budget=TimeBudget.of(seconds), gap=gap,
        consider=consider, on_bound=bounds.append, controls=controls,
    )
    return data, stats, plans, bounds, float(best["value"])
