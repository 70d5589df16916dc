"""Running HiGHS: a wall-clock watchdog, warm starts, LP relaxations, and one map from HiGHS statuses to ours."""

from __future__ import annotations

import logging
import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum

import highspy
import numpy as np

log = logging.getLogger(__name__)

# HiGHS checks its own time limit only between work units; past this the watchdog interrupts it.
WATCHDOG_GRACE_S = 0.5


class Outcome(Enum):
    """What one solve ended with, in our terms."""

    optimal = "optimal"
    limit_with_solution = "limit_with_solution"
    limit_without_solution = "limit_without_solution"
    infeasible = "infeasible"
    error = "error"


_MS = highspy.HighsModelStatus
_LIMITS = {
    _MS.kTimeLimit,
    _MS.kIterationLimit,
    _MS.kSolutionLimit,
    _MS.kInterrupt,
    _MS.kHighsInterrupt,
    _MS.kObjectiveBound,
    _MS.kObjectiveTarget,
    _MS.kMemoryLimit,
}
_ERRORS = {_MS.kLoadError, _MS.kModelError, _MS.kPresolveError, _MS.kSolveError, _MS.kPostsolveError, _MS.kNotset}


def map_status(status, has_solution: bool) -> Outcome:
    """Every HiGHS model status to our Outcome; an unknown one is logged and kept only if it left a solution."""
    if status == _MS.kOptimal:
        return Outcome.optimal
    if status in _LIMITS:
        return Outcome.limit_with_solution if has_solution else Outcome.limit_without_solution
    # Every variable of our models is bounded, so "unbounded or infeasible" can only be infeasible.
    if status in (_MS.kInfeasible, _MS.kUnboundedOrInfeasible):
        return Outcome.infeasible
    if status in _ERRORS:
        log.error("HiGHS failed with %s", status)
        return Outcome.error
    log.warning("HiGHS ended with unexpected status %s", status)
    return Outcome.limit_with_solution if has_solution else Outcome.error


@dataclass(frozen=True)
class SolveResult:
    outcome: Outcome
    incumbent: float | None  # the model's objective at the returned point
    bound: float | None  # proven bound on the model's objective
    seconds: float
    values: np.ndarray | None  # column values of the returned point
    nodes: int = 0


def new_highs() -> highspy.Highs:
    with _quiet_stdout():
        # HiGHS prints its banner on stdout when constructed, before any option can turn it off; stdout is
        # where the CLI writes plan JSON.
        h = highspy.Highs()
    return configure(h)


@contextmanager
def _quiet_stdout():
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    try:
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def configure(h: highspy.Highs) -> highspy.Highs:
    """Our HiGHS options, the same whichever backend built the model."""
    h.setOptionValue("output_flag", os.environ.get("OPTSCHED_HIGHS_LOG") == "1")
    # Lets cancelSolve (the watchdog) interrupt simplex, IPM and branch-and-bound through HiGHS's callbacks.
    h.HandleUserInterrupt = True
    return h


def run_highs(
    h: highspy.Highs,
    *,
    wall_deadline: float,
    mip_gap: float,
    threads: int | None = None,
    warm_start: tuple[np.ndarray, np.ndarray] | None = None,
    relax: bool = False,
    integer_columns: np.ndarray | None = None,
    presolve: bool = False,
) -> SolveResult:
    """Solve what `h` holds until `wall_deadline` (time.monotonic); `relax` solves the LP relaxation instead
    (with `integer_columns` made continuous for that solve)."""
    started = time.perf_counter()
    limit = max(0.01, wall_deadline - time.monotonic())
    h.setOptionValue("time_limit", limit)
    h.setOptionValue("mip_rel_gap", mip_gap)
    # HiGHS's default absolute gap (1e-6) would stop it short of small relative gaps on small objectives.
    h.setOptionValue("mip_abs_gap", 1e-9)
    # Off by default (it costs more than it saves on the full model, bench/results/planner.md); on for
    # sub-MIPs whose fixed columns it removes.
    h.setOptionValue("presolve", "on" if presolve else "off")
    if threads is not None:
        h.setOptionValue("threads", threads)
    integer_cols = None
    if relax:
        integer_cols = _integer_columns(h) if integer_columns is None else integer_columns
        if len(integer_cols):
            h.changeColsIntegrality(len(integer_cols), integer_cols, np.zeros(len(integer_cols), dtype=np.uint8))
    if warm_start is not None and not relax:
        h.setSolution(len(warm_start[0]), warm_start[0], warm_start[1])
    try:
        h.startSolve()
        finished, _ = h.wait(limit + WATCHDOG_GRACE_S)
        if not finished:
            log.warning("HiGHS overran its %.2f s limit; interrupting it", limit)
            h.cancelSolve()
            h.wait()
        return _result(h, time.perf_counter() - started, relax)
    finally:
        if integer_cols is not None and len(integer_cols):
            h.changeColsIntegrality(len(integer_cols), integer_cols, np.ones(len(integer_cols), dtype=np.uint8))


def _integer_columns(h: highspy.Highs) -> np.ndarray:
    return np.flatnonzero(np.asarray(h.getLp().integrality_, dtype=np.uint8)).astype(np.int32)


def _result(h: highspy.Highs, seconds: float, relax: bool) -> SolveResult:
    status = h.getModelStatus()
    info = h.getInfo()
    has_solution = info.primal_solution_status == 2  # 2 = feasible
    outcome = map_status(status, has_solution)
    incumbent = info.objective_function_value if has_solution else None
    is_lp = relax or info.mip_node_count < 0
    if is_lp:
        bound = incumbent if outcome == Outcome.optimal else None
    else:
        bound = info.mip_dual_bound
    values = np.array(h.getSolution().col_value) if has_solution else None
    return SolveResult(
        outcome=outcome,
        incumbent=incumbent,
        bound=bound,
        seconds=seconds,
        values=values,
        nodes=max(0, info.mip_node_count),
    )
