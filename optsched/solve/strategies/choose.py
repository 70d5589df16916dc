"""The one place that decides how a workload is solved, from its size and the SolveOptions."""

from __future__ import annotations

import logging

from optsched.model.data import ModelData
from optsched.solve.budget import TimeBudget
from optsched.solve.decompose import option_count
from optsched.solve.options import SolveOptions, StrategyName
from optsched.solve.strategies.base import SolveFn, Strategy
from optsched.solve.strategies.columns import ColumnGeneration
from optsched.solve.strategies.direct import DirectMilp
from optsched.solve.strategies.heuristic import HeuristicOnly
from optsched.solve.strategies.parts import Parts

log = logging.getLogger(__name__)

# Building the model takes about this long per placement option (measured: 0.93 s for L's 118,000 options
# unloaded, up to 5x that on the shared machine); it is skipped when the time left is under BUILD_TIME_FACTOR
# times the estimate.
BUILD_S_PER_OPTION = 1e-5
BUILD_TIME_FACTOR = 4.0
# Budgeted power domains from which a workload counts as linked (columns_from): the rack family has 4 at 200 jobs,
# the plain one 2.
LINKED_DOMAINS = 3


# Every strategy, by its name in SolveOptions.strategy ("auto" names none: choose_strategy decides).
STRATEGIES: dict[StrategyName, type[Strategy]] = {
    cls.name: cls for cls in (DirectMilp, ColumnGeneration, Parts, HeuristicOnly)
}


def choose_strategy(
    data: ModelData, options: SolveOptions, *, has_first_plan: bool, budget: TimeBudget, solve_part: SolveFn
) -> Strategy:
    """`options.strategy`, or under "auto" (and for a forced strategy that cannot apply) by size: columns where they
    apply from `columns_from` placement options up to `column_max_options`; parts above `direct_max_options`; the first
    plan alone when the time left would not build the model; the one MILP otherwise. `solve_part` solves each
    part of the parts strategy."""
    name = options.strategy
    if name != "auto" and not STRATEGIES[name].applies(data, options, has_first_plan):
        log.warning("strategy %r does not apply to workload %r; choosing by size", name, data.workload.name)
        name = "auto"
    if name == "auto":
        name = _by_size(data, options, has_first_plan, budget)
    return STRATEGIES[name].create(options, solve_part)


def columns_from(data: ModelData, options: SolveOptions) -> int:
    """The option count from which column generation replaces the one MILP under "auto" (where it applies):
    `column_min_options`, or the lower `column_min_options_linked` when LINKED_DOMAINS or more power domains have
    budgets of their own (they link the jobs, and the one MILP's relaxation is weak there; SolveOptions has the
    measurements)."""
    w = data.workload
    budgeted = {g.domain for g in w.devices if g.domain is not None} & set(w.power.domains)
    if len(budgeted) >= LINKED_DOMAINS:
        return min(options.column_min_options, options.column_min_options_linked)
    return options.column_min_options


def _by_size(data: ModelData, options: SolveOptions, has_first_plan: bool, budget: TimeBudget) -> StrategyName:
    n_options = option_count(data)
    columns = ColumnGeneration.applies(data, options, has_first_plan) and n_options <= options.column_max_options
    if columns and n_options >= columns_from(data, options):
        return "columns"
    if Parts.applies(data, options, has_first_plan) and n_options > options.direct_max_options:
        return "columns" if columns else "parts"
    if HeuristicOnly.applies(data, options, has_first_plan) and (
        budget.remaining() < BUILD_TIME_FACTOR * BUILD_S_PER_OPTION * n_options
    ):
        return "heuristic"
    return "direct"
