"""HiGHS through Pyomo's persistent interface, with a wall-clock watchdog, warm starts and one status map."""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from enum import Enum

import numpy as np
import pyomo.environ as pyo
from pyomo.contrib.solver.common.results import SolutionStatus, TerminationCondition
from pyomo.contrib.solver.solvers.highs import Highs

log = logging.getLogger(__name__)

# HiGHS checks its own time limit only between work units; past this the watchdog interrupts it.
WATCHDOG_GRACE_S = 0.5


class Outcome(Enum):
    """What one MILP solve ended with, in our terms."""

    optimal = "optimal"
    limit_with_solution = "limit_with_solution"
    limit_without_solution = "limit_without_solution"
    infeasible = "infeasible"
    error = "error"


def map_termination(termination: TerminationCondition, solution: SolutionStatus) -> Outcome:
    """Every Pyomo termination condition to our Outcome; anything unknown is logged and treated as an error."""
    has_solution = solution in (SolutionStatus.feasible, SolutionStatus.optimal)
    if termination == TerminationCondition.convergenceCriteriaSatisfied:
        return Outcome.optimal
    if termination in (
        TerminationCondition.maxTimeLimit,
        TerminationCondition.iterationLimit,
        TerminationCondition.objectiveLimit,
        TerminationCondition.interrupted,
        TerminationCondition.minStepLength,
    ):
        return Outcome.limit_with_solution if has_solution else Outcome.limit_without_solution
    if termination in (TerminationCondition.provenInfeasible, TerminationCondition.locallyInfeasible):
        return Outcome.infeasible
    if termination == TerminationCondition.infeasibleOrUnbounded:
        # Every variable of our model is bounded, so "infeasible or unbounded" can only be infeasible.
        return Outcome.infeasible
    log.warning("HiGHS ended with %s (%s); treating it as a solver error", termination, solution)
    return Outcome.limit_with_solution if has_solution else Outcome.error


@dataclass(frozen=True)
class SolveResult:
    outcome: Outcome
    incumbent: float | None  # the model's objective at the incumbent
    bound: float | None  # the solver's proven bound on the model's objective
    seconds: float


class WatchedHighs(Highs):
    """Pyomo's persistent HiGHS with a hard wall-clock deadline (cancelSolve) and an optional warm start."""

    # Class defaults, not __init__: Pyomo's set_instance re-runs __init__ on the instance.
    wall_deadline: float = math.inf
    warm_start: dict[int, float] | None = None  # id(pyomo var) -> value

    def _solve(self):
        config = self._active_config
        h = self._solver_model
        h.setOptionValue("output_flag", bool(config.tee))
        if config.threads is not None:
            h.setOptionValue("threads", config.threads)
        remaining = self.wall_deadline - time.monotonic()
        limit = max(0.05, min(remaining, config.time_limit if config.time_limit is not None else math.inf))
        h.setOptionValue("time_limit", limit)
        if config.rel_gap is not None:
            h.setOptionValue("mip_rel_gap", config.rel_gap)
        for key, option in config.solver_options.items():
            h.setOptionValue(key, option)
        if self.warm_start:
            self._set_warm_start(h)
        h.startSolve()
        finished, _ = h.wait(limit + WATCHDOG_GRACE_S)
        if not finished:
            log.warning("HiGHS overran its %.2f s limit; interrupting it", limit)
            h.cancelSolve()
            h.wait()
        return self._postsolve(_NullStream())

    def _set_warm_start(self, h) -> None:
        index, values = [], []
        for var_id, value in self.warm_start.items():
            col = self._pyomo_var_to_solver_var_map.get(var_id)
            if col is not None:
                index.append(col)
                values.append(value)
        if index:
            h.setSolution(len(index), np.asarray(index, dtype=np.int32), np.asarray(values, dtype=np.float64))


class _NullStream:
    def getvalue(self) -> str:
        return ""


class Runner:
    """Solves one model repeatedly (cuts are added between solves) until a shared wall-clock deadline."""

    def __init__(self, wall_deadline: float, mip_gap: float, threads: int | None = None):
        self.solver = WatchedHighs()
        self.solver.wall_deadline = wall_deadline
        self.mip_gap = mip_gap
        self.threads = threads

    def solve(self, m: pyo.ConcreteModel, warm_start: dict[int, float] | None = None) -> SolveResult:
        self.solver.warm_start = warm_start
        start = time.perf_counter()
        results = self.solver.solve(
            m,
            rel_gap=self.mip_gap,
            threads=self.threads,
            load_solutions=False,
            raise_exception_on_nonoptimal_result=False,
        )
        outcome = map_termination(results.termination_condition, results.solution_status)
        if outcome in (Outcome.optimal, Outcome.limit_with_solution):
            results.solution_loader.load_vars()
        return SolveResult(
            outcome=outcome,
            incumbent=results.incumbent_objective,
            bound=results.objective_bound,
            seconds=time.perf_counter() - start,
        )
