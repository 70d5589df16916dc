"""One HiGHS model solved several times (column generation's master, the slotted night's rounds): each solve keeps
its own time limit, and a solve once interrupted does not stop the next."""

from __future__ import annotations

import time

import highspy
import numpy as np
import pytest

from optsched.solve import highs
from optsched.solve.highs import Outcome, new_highs, run_highs
from tests.support.timing import past_deadline

pytestmark = pytest.mark.slow  # solves that run to their time limits

LIMIT_S = 1.0


def _hard_knapsacks(seed: int = 0) -> highspy.Highs:
    """400 binaries under 60 random knapsack rows: HiGHS finds plans at once and proves none within seconds."""
    rng = np.random.default_rng(seed)
    n, m = 400, 60
    h = new_highs()
    h.addVars(n, np.zeros(n), np.ones(n))
    every = np.arange(n, dtype=np.int32)
    h.changeColsIntegrality(n, every, np.ones(n, dtype=np.uint8))
    h.changeColsCost(n, every, rng.integers(10, 100, n).astype(np.float64))
    h.changeObjectiveSense(highspy.ObjSense.kMaximize)
    for _ in range(m):
        weights = rng.integers(1, 50, n).astype(np.float64)
        h.addRow(-highspy.kHighsInf, 0.3 * weights.sum(), n, every, weights)
    return h


def test_a_milp_solved_again_stops_at_its_own_limit_not_the_watchdogs():
    h = _hard_knapsacks()
    for _ in range(3):
        start = time.monotonic()
        result = run_highs(h, wall_deadline=start + LIMIT_S, mip_gap=0.0)
        elapsed = time.monotonic() - start
        # HiGHS's own time limit (kTimeLimit), not the watchdog's interrupt past it (kInterrupt).
        assert h.getModelStatus() == highspy.HighsModelStatus.kTimeLimit
        assert result.outcome is Outcome.limit_with_solution and not result.abandoned
        assert elapsed <= past_deadline(LIMIT_S, highs.WATCHDOG_GRACE_S), elapsed


def test_an_lp_solved_again_gets_its_whole_limit():
    # The LP's clock is the run time of every solve so far: a limit taken as this solve's alone would end it at once.
    h = _hard_knapsacks()
    run_highs(h, wall_deadline=time.monotonic() + LIMIT_S, mip_gap=0.0)
    lp = run_highs(h, wall_deadline=time.monotonic() + LIMIT_S, mip_gap=0.0, relax=True)
    assert lp.outcome is Outcome.optimal


def test_a_solve_after_an_interrupted_one_runs():
    h = _hard_knapsacks()
    h.setOptionValue("time_limit", 100.0)
    h.startSolve()
    time.sleep(0.3)
    h.cancelSolve()
    finished, _ = h.wait(5.0)
    assert finished and h.getModelStatus() == highspy.HighsModelStatus.kInterrupt
    start = time.monotonic()
    result = run_highs(h, wall_deadline=start + LIMIT_S, mip_gap=0.0)
    # Before: kInterrupt at HiGHS's first check, in a few milliseconds.
    assert h.getModelStatus() == highspy.HighsModelStatus.kTimeLimit
    assert time.monotonic() - start >= 0.5 * LIMIT_S
    assert result.outcome is Outcome.limit_with_solution
