"""Running HiGHS: a wall-clock watchdog, warm starts, LP relaxations, and the statuses of HiGHS (`map_status`) and
of Pyomo's HiGHS interface (`map_pyomo_status`) mapped to our `Outcome` in this one module."""

from __future__ import annotations

import atexit
import functools
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum

import highspy
import numpy as np

log = logging.getLogger(__name__)
# HiGHS's own log (it writes to stdout, not through logging) is on while this logger's level is DEBUG; at INFO by
# default, so an application that logs everything at DEBUG does not get the solver's pages by surprise. The
# services set it from Settings.HIGHS_LOG (OPTSCHED_HIGHS_LOG) in every solving process.
SOLVER_LOG = logging.getLogger("optsched.solver_log")
SOLVER_LOG.setLevel(logging.INFO)


def solver_log_shown() -> bool:
    """Whether HiGHS prints its own log (SOLVER_LOG at DEBUG)."""
    return SOLVER_LOG.isEnabledFor(logging.DEBUG)

# HiGHS checks its own time limit only between work units; past this the watchdog interrupts it.
WATCHDOG_GRACE_S = 0.5
# After an interrupt, HiGHS gets this long to stop; then the solve is abandoned (its thread ends on its own).
CANCEL_WAIT_S = 1.0
# A solve with less time than this left is not started.
MIN_SOLVE_S = 0.05
# The watchdog wakes this often to hand the latest incumbent and bound to `on_poll`.
POLL_S = 0.25


# At exit, an abandoned HiGHS gets this long to stop before the interpreter goes on tearing down (its solver
# threads running through that teardown end the process with "terminate called without an active exception").
EXIT_WAIT_S = 120.0

_abandoned: list[highspy.Highs] = []
_abandoned_lock = threading.Lock()


def _abandon(h: highspy.Highs) -> None:
    with _abandoned_lock:
        if not _abandoned:
            atexit.register(_wait_for_abandoned)
        _abandoned.append(h)


def _wait_for_abandoned() -> None:
    """Let abandoned solves finish (they were interrupted and have their own time limit) before teardown."""
    stop = time.monotonic() + EXIT_WAIT_S
    for h in list(_abandoned):
        h.cancelSolve()
        h.wait(max(0.0, stop - time.monotonic()))


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
    _MS.kHighsInterrupt,  # type: ignore[attr-defined]  # in highspy, missing from its stubs
    _MS.kObjectiveBound,
    _MS.kObjectiveTarget,
    _MS.kMemoryLimit,
}
_ERRORS = {_MS.kLoadError, _MS.kModelError, _MS.kPresolveError, _MS.kSolveError, _MS.kPostsolveError, _MS.kNotset}


def map_status(status: highspy.HighsModelStatus, has_solution: bool) -> Outcome:
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


def pyomo_has_solution(solution_status: object) -> bool:
    """Whether Pyomo's solution status says a point was loaded (feasible or optimal)."""
    from pyomo.contrib.solver.common.results import SolutionStatus

    return solution_status in (SolutionStatus.feasible, SolutionStatus.optimal)


def map_pyomo_status(termination, has_solution: bool) -> Outcome:
    """Every Pyomo termination condition to our Outcome (the sibling of optsched.solve.highs.map_status); an unknown
    one is logged and kept only if it left a solution."""
    outcome = _termination_map().get(termination)
    if outcome is None:
        log.warning("Pyomo's HiGHS interface ended with unexpected termination condition %s", termination)
        return Outcome.limit_with_solution if has_solution else Outcome.error
    if outcome is Outcome.limit_with_solution and not has_solution:
        return Outcome.limit_without_solution
    if outcome is Outcome.error:
        log.error("HiGHS (through Pyomo) failed with %s", termination)
    return outcome


@functools.cache
def _termination_map() -> dict:
    from pyomo.contrib.solver.common.results import TerminationCondition as TC

    return {
        TC.convergenceCriteriaSatisfied: Outcome.optimal,
        TC.maxTimeLimit: Outcome.limit_with_solution,
        TC.iterationLimit: Outcome.limit_with_solution,  # also HiGHS's solution limit
        TC.objectiveLimit: Outcome.limit_with_solution,
        TC.minStepLength: Outcome.limit_with_solution,
        TC.interrupted: Outcome.limit_with_solution,
        # Not proven infeasible: only no point found, as when a limit stops the search.
        TC.locallyInfeasible: Outcome.limit_with_solution,
        TC.provenInfeasible: Outcome.infeasible,
        # Every variable of our models is bounded, so "infeasible or unbounded" can only be infeasible.
        TC.infeasibleOrUnbounded: Outcome.infeasible,
        # Our models are bounded: an unbounded one was broken by a row added to them.
        TC.unbounded: Outcome.error,
        TC.error: Outcome.error,
        TC.licensingProblems: Outcome.error,
        TC.emptyModel: Outcome.error,
        # TC.unknown (HiGHS's "unknown", "interrupt" and "memory limit", among others) is deliberately absent:
        # it takes the logged fallback of map_pyomo_status.
    }


@dataclass(frozen=True)
class SolveResult:
    outcome: Outcome
    incumbent: float | None  # the model's objective at the returned point
    bound: float | None  # proven bound on the model's objective
    seconds: float
    values: np.ndarray | None  # column values of the returned point
    nodes: int = 0
    # HiGHS did not stop within CANCEL_WAIT_S of its interrupt: its object is still busy and must not be reused.
    abandoned: bool = False


def solution_values(
    result: SolveResult, column: Callable[[str, Hashable], int], name: str, keys: Iterable[Hashable]
) -> dict[Hashable, float]:
    """The values of variables `name[key]` at `result`, `column(name, key)` giving each one's column."""
    if result.values is None:
        raise ValueError(f"no solution to read {name!r} from ({result.outcome.value})")
    values = result.values
    return {k: float(values[column(name, k)]) for k in keys}


# Called from the waiting thread with (model objective, column values or None if no new point, model bound or None).
Poll = Callable[[float | None, np.ndarray | None, float | None], None]


@dataclass(frozen=True)
class SolveRequest:
    """One solve of a built model, whichever backend (optsched.solve.backends.SolverBackend.solve): until
    `wall_deadline` (time.monotonic) or a relative gap of `mip_gap`; `relax` solves the LP relaxation; `warm_start`
    maps (variable block, key) to a starting value; `presolve` is on for sub-MIPs only; `on_poll` receives each
    improved MIP incumbent (and the bound) while HiGHS runs."""

    wall_deadline: float
    mip_gap: float
    threads: int | None = None
    warm_start: Mapping[tuple[str, Hashable], float] | None = None
    relax: bool = False
    presolve: bool = False
    on_poll: Poll | None = None


class _Incumbents:
    """What HiGHS's MIP callbacks saw last (written on the solver's thread, read on ours)."""

    def __init__(self, columns: int):
        self.columns = columns
        self.objective: float | None = None
        self.values: np.ndarray | None = None
        self.bound: float | None = None
        self.fresh = False
        self.stop = False  # set by the watchdog: every interrupt event of this solve stops it

    def interrupt(self, e) -> None:
        # HiGHS keeps a callback's interrupt flag from one solve to the next: a solve once cancelled would stop
        # every later solve of the same model at its first check (kInterrupt at once). Each event says it anew.
        e.interrupt(self.stop)

    def improving(self, e) -> None:
        solution = np.array(e.data_out.mip_solution, dtype=np.float64)
        if len(solution) == self.columns:
            self.objective, self.values, self.fresh = e.data_out.objective_function_value, solution, True
        self.bound = e.data_out.mip_dual_bound

    def progress(self, e) -> None:
        self.bound = e.data_out.mip_dual_bound

    def take(self) -> tuple[float | None, np.ndarray | None, float | None]:
        values, self.fresh = (self.values if self.fresh else None), False
        bound = self.bound if self.bound is not None and np.isfinite(self.bound) else None
        return self.objective, values, bound


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
    h.setOptionValue("output_flag", solver_log_shown())
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
    on_poll: Poll | None = None,
) -> SolveResult:
    """Solve what `h` holds until `wall_deadline` (time.monotonic); `relax` solves the LP relaxation instead
    (with `integer_columns` made continuous for that solve). `on_poll` receives each improved MIP incumbent
    (and the bound) while HiGHS runs. Returns by about wall_deadline + WATCHDOG_GRACE_S + CANCEL_WAIT_S whatever
    HiGHS does: a solve that ignores its interrupt is abandoned with the last incumbent its callbacks saw."""
    started = time.perf_counter()
    if wall_deadline - time.monotonic() < MIN_SOLVE_S:
        # Too late to start: HiGHS's setup alone (factorisation, clique table) would overrun the deadline.
        return SolveResult(Outcome.limit_without_solution, None, None, 0.0, None)
    # highspy lets one solve run per process at a time (its locks are class attributes): one abandoned earlier
    # may still hold them, and starting another would raise. Wait for it while there is time, else give up.
    while h.is_solver_running():
        if wall_deadline - time.monotonic() < MIN_SOLVE_S:
            log.warning("an abandoned HiGHS solve is still running; this one is not started")
            return SolveResult(Outcome.limit_without_solution, None, None, 0.0, None)
        time.sleep(POLL_S / 5)
    limit = wall_deadline - time.monotonic()
    # HiGHS compares an LP's time_limit with the run time summed over every run of this object (ERGO-Code/HiGHS#1331,
    # #1477), a MIP's with its own run's clock (highspy 1.16; tests/test_highs_runs.py holds both): an LP solved
    # again (column generation) would stop at once, a MIP after others would run past its limit by their time.
    mip = not relax and (integer_columns is None or len(integer_columns) > 0)
    h.setOptionValue("time_limit", limit if mip else h.getRunTime() + limit)
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
    seen = _Incumbents(h.getNumCol())
    watching = not relax
    if watching:
        h.cbMipImprovingSolution += seen.improving
        h.cbMipInterrupt += seen.progress
    h.cbSimplexInterrupt += seen.interrupt
    h.cbIpmInterrupt += seen.interrupt
    h.cbMipInterrupt += seen.interrupt
    abandoned = False
    try:
        h.startSolve()
        stop = time.monotonic() + limit + WATCHDOG_GRACE_S
        finished = False
        while not finished:
            finished, _ = h.wait(max(0.0, min(POLL_S, stop - time.monotonic())))
            if not finished and on_poll is not None and watching:
                on_poll(*seen.take())
            if not finished and time.monotonic() >= stop:
                log.warning("HiGHS overran its %.2f s limit; interrupting it", limit)
                seen.stop = True
                h.cancelSolve()
                finished, _ = h.wait(CANCEL_WAIT_S)
                if not finished:
                    log.warning("HiGHS ignored the interrupt for %.1f s; abandoning the solve", CANCEL_WAIT_S)
                    abandoned = True
                    _abandon(h)
                break
        if abandoned:
            objective, values, bound = seen.objective, seen.values, seen.bound
            return SolveResult(
                outcome=Outcome.limit_with_solution if values is not None else Outcome.limit_without_solution,
                incumbent=objective, bound=bound if bound is not None and np.isfinite(bound) else None,
                seconds=time.perf_counter() - started, values=values, abandoned=True,
            )
        result = _result(h, time.perf_counter() - started, relax)
        log.debug(
            "HiGHS %s: %s in %.2f s of %.2f s", "LP" if relax else "MILP", result.outcome.value, result.seconds, limit
        )
        return result
    finally:
        if not abandoned:
            if watching:
                h.cbMipImprovingSolution -= seen.improving
                h.cbMipInterrupt -= seen.progress
            h.cbSimplexInterrupt -= seen.interrupt
            h.cbIpmInterrupt -= seen.interrupt
            h.cbMipInterrupt -= seen.interrupt
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
