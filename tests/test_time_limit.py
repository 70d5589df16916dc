"""Time limits are honoured: a hard instance asked for 2 s comes back by about 3 s with a verified plan."""

from __future__ import annotations

import time

import pytest

from optsched import Status
from optsched.solve import highs
from optsched.testing.instances import generate
from tests.conftest import plan_checked
from tests.support.timing import past_deadline

pytestmark = pytest.mark.slow  # solves that run to their time limits

# The watchdog's documented overrun past a deadline: its grace, then the wait for HiGHS to take the interrupt.
WATCHDOG_S = highs.WATCHDOG_GRACE_S + highs.CANCEL_WAIT_S


def test_two_second_limit_returns_the_best_plan_found_by_about_three_seconds():
    # A 60-job instance at gap 0: plans come quickly, the proof does not; the deadline must stop the search.
    workload = generate("T", 0, options={"time_limit_s": 2.0, "mip_gap": 0.0})
    start = time.monotonic()
    result = plan_checked(workload)
    elapsed = time.monotonic() - start
    assert elapsed <= past_deadline(2.0, WATCHDOG_S), elapsed
    assert result.status == Status.time_limit
    assert result.gap is not None and result.gap > 0 and result.bound >= result.objective


class _StuckHighs:
    """Stands in for a highspy.Highs whose solve ignores both its time limit and the interrupt."""

    class _Callbacks(list):
        def __iadd__(self, fn):
            self.append(fn)
            return self

        def __isub__(self, fn):
            self.remove(fn)
            return self

    def __init__(self):
        self.cbMipImprovingSolution = self._Callbacks()
        self.cbMipInterrupt = self._Callbacks()
        self.cbSimplexInterrupt = self._Callbacks()
        self.cbIpmInterrupt = self._Callbacks()
        self.cancelled = False

    def setOptionValue(self, name, value):
        pass

    def getRunTime(self):
        return 0.0

    def is_solver_running(self):
        return False

    def getNumCol(self):
        return 3

    def startSolve(self):
        pass

    def wait(self, timeout=-1.0):
        time.sleep(max(0.0, timeout))
        return False, None

    def cancelSolve(self):
        self.cancelled = True


def test_a_solver_that_ignores_its_interrupt_is_abandoned_within_a_bounded_wait():
    stuck = _StuckHighs()
    start = time.monotonic()
    result = highs.run_highs(stuck, wall_deadline=time.monotonic() + 0.5, mip_gap=0.01)
    elapsed = time.monotonic() - start
    assert stuck.cancelled
    assert result.abandoned and result.outcome == highs.Outcome.limit_without_solution
    assert elapsed <= past_deadline(0.5, WATCHDOG_S), elapsed
    highs._abandoned.remove(stuck)  # not a real solver: nothing to wait for at exit


def test_large_workload_returns_its_best_plan_within_the_limit():
    # 1,000 jobs on 32 groups in racks, asked for 4 s: the constructive first plan comes in well under a second,
    # so whatever the solver manages, a verified plan comes back with status time_limit (or optimal) in time.
    from optsched.testing.instances import generate_racks

    workload = generate_racks("L", 0, options={"time_limit_s": 4.0})
    start = time.monotonic()
    result = plan_checked(workload)
    elapsed = time.monotonic() - start
    assert elapsed <= past_deadline(4.0, WATCHDOG_S), elapsed
    assert result.status in (Status.time_limit, Status.optimal)
    assert result.objective > 0 and result.bound is not None and result.gap is not None


def test_a_solve_waits_for_an_abandoned_one_and_gives_up_at_its_deadline():
    # highspy allows one solve per process at a time: while an abandoned one still runs, a new solve must not
    # raise "Solver is already running" but wait, and give up (no solution) when its own time is over.
    class _Busy(_StuckHighs):
        def is_solver_running(self):
            return True

    busy = _Busy()
    start = time.monotonic()
    result = highs.run_highs(busy, wall_deadline=time.monotonic() + 0.3, mip_gap=0.01)
    assert result.outcome == highs.Outcome.limit_without_solution and result.values is None
    assert time.monotonic() - start <= past_deadline(0.3, 0.0)  # it gives up at its deadline, not later
    assert not busy.cancelled  # it never started
