"""Soft deadlines in the per-event MILP's weights: a soft deadline within reach makes its job dearer, so the MILP
does not trade it away for weighted completion; hard deadlines stay constraints."""

from __future__ import annotations

import pytest

from optsched.night.planner import CANDIDATE_NAMES, priced_completion
from tests.night.conftest import night_checked
from tests.support.factories import device, job, workload

CANDIDATE = "milp-soft"


def soft_queue(deadline: float | None, priority: str = "normal") -> dict:
    """One device (speed 1). A (high, 1 h) and B (normal, 1.2 h, soft deadline `deadline`), both ready at 0 h.

    Weighted shortest remaining time alone runs A first (high weighs more per hour), so B ends at 2.2 h; with B's
    soft deadline at 1.3 h its slack is 0.1 h and its weight is multiplied by 1 + 1 h / 0.25 h = 5, so B runs
    first and ends at 1.2 h, A at 2.2 h."""
    extra = {} if deadline is None else {"deadline_hours": deadline}
    return workload(
        [device("g", "m", 1, [(100, 1.0)])],
        [job("A", work=1.0, p=1.0, priority="high"), job("B", work=1.2, p=1.0, priority=priority, **extra)],
    )


def finishes(plan) -> dict[str, float]:
    return {t.job: t.finish_hours for t in plan.jobs}


def test_without_a_deadline_the_milp_runs_the_heavier_job_first():
    plan = night_checked(soft_queue(None), candidates=(CANDIDATE,))
    assert finishes(plan) == {"A": pytest.approx(1.0), "B": pytest.approx(2.2)}


def test_a_soft_deadline_within_reach_is_kept_by_the_milp():
    plan = night_checked(soft_queue(1.3), candidates=(CANDIDATE,))
    assert finishes(plan) == {"A": pytest.approx(2.2), "B": pytest.approx(1.2)}
    assert plan.summary.soft_deadlines_missed == ()


def test_the_plain_milp_prices_no_soft_deadline_and_the_planner_keeps_the_better_timeline():
    assert CANDIDATE in CANDIDATE_NAMES
    plain = night_checked(soft_queue(1.3), candidates=("milp",))
    assert finishes(plain) == {"A": pytest.approx(1.0), "B": pytest.approx(2.2)}
    assert plain.summary.soft_deadlines_missed == ("B",)
    # The ranking prices B's miss at 1 h: A first (4 x 1 + 2 x 2.2 + 2 x 1) / 6 = 1.733 h beats B first
    # (4 x 2.2 + 2 x 1.2) / 6 = 1.867 h, and the planner keeps the better of the two candidates.
    soft = night_checked(soft_queue(1.3), candidates=(CANDIDATE,))
    assert priced_completion(plain) == pytest.approx(10.4 / 6) and priced_completion(soft) == pytest.approx(11.2 / 6)
    assert priced_completion(night_checked(soft_queue(1.3))) == pytest.approx(10.4 / 6)


def test_a_soft_deadline_out_of_reach_adds_nothing():
    """B cannot end by 1.1 h even alone (1.2 h of work): it is late anyway and A, heavier, goes first."""
    plan = night_checked(soft_queue(1.1), candidates=(CANDIDATE,))
    assert finishes(plan) == {"A": pytest.approx(1.0), "B": pytest.approx(2.2)}
    assert plan.summary.soft_deadlines_missed == ("B",)
