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


def choose_strategy(
    data: ModelData, options: SolveOptions, *, has_first_plan: bool, budget: TimeBudget, solve_part: SolveFn
) -> Strategy:
    """`options.strategy`, or under "auto" (and for a forced strategy that cannot apply) by size: the parts and
    columns split plain workloads on HiGHS with a first plan above `direct_max_options` options; the first plan
    alone when the time left would not build the model; the one MILP otherwise. `solve_part` solves each part."""
    objective = data.workload.objective
    plain = options.extra_functionality is None and options.extra_objective is None and options.backend == "highs"
    # Both decompositions start from the first plan and know only the workload's own rows and terms.
    splittable = has_first_plan and plain
    # The heuristics cannot see rows added by extra_functionality.
    heuristic = has_first_plan and options.extra_functionality is None
    applies: dict[StrategyName, bool] = {
        "direct": True,
        "columns": splittable and objective == "weighted_speedup",
        "parts": splittable,
        "heuristic": heuristic,
    }
    name = options.strategy
    if name != "auto" and not applies[name]:
        log.warning("strategy %r does not apply to workload %r; choosing by size", name, data.workload.name)
        name = "auto"
    if name == "auto":
        n_options = option_count(data)
        if splittable and n_options > options.direct_max_options:
            name = "columns" if applies["columns"] and n_options <= options.column_max_options else "parts"
        elif heuristic and budget.remaining() < BUILD_TIME_FACTOR * BUILD_S_PER_OPTION * n_options:
            name = "heuristic"
        else:
            name = "direct"
    if name == "columns":
        return ColumnGeneration(options.threads)
    if name == "parts":
        return Parts(options, solve_part)
    if name == "heuristic":
        return HeuristicOnly(with_bound=options.extra_objective is None)
    return DirectMilp(options)
