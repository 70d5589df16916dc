"""Soft deadlines in the dispatch order `hybrid-soft` and in the planner's final choice (`choose`): a light job's
soft deadline close at hand is kept when keeping it costs little weighted completion, and only then."""

from __future__ import annotations

import pytest

from optsched.night.dispatch import SOFT_SLACK_HOURS, TIGHT_SOFT_SLACK_HOURS
from optsched.night.planner import SOFT_MISS_SHARE, choose, priced_completion, score
from tests.night.conftest import night_checked
from tests.support.factories import device, job, workload

PAIR = ("dispatch-hybrid", "dispatch-hybrid-soft")
TIGHT = "dispatch-hybrid-soft-tight"


def light_soft_queue(b_work: float) -> dict:
    """One device (speed 1). A (5 h, weight 1) and B (`b_work` h, weight 0.001, soft deadline b_work + 0.01 h), both
    ready at 0 h: Smith's rule runs A first (1 / 5 per hour beats 0.001 / b_work) and B misses its deadline;
    B's slack at 0 h is 0.01 h, under SOFT_SLACK_HOURS, so hybrid-soft runs B first."""
    return workload(
        [device("g", "m", 1, [(100, 1.0)])],
        [
            job("A", work=5.0, p=1.0),
            job("B", work=b_work, p=1.0, weight=0.001, deadline_hours=b_work + 0.01),
        ],
    )


def finishes(plan) -> dict[str, float]:
    return {t.job: t.finish_hours for t in plan.jobs}


def test_hybrid_runs_smiths_rule_and_hybrid_soft_keeps_the_close_soft_deadline():
    hybrid = night_checked(light_soft_queue(0.02), candidates=("dispatch-hybrid",))
    assert finishes(hybrid) == {"A": pytest.approx(5.0), "B": pytest.approx(5.02)}
    assert hybrid.summary.soft_deadlines_missed == ("B",)
    soft = night_checked(light_soft_queue(0.02), candidates=("dispatch-hybrid-soft",))
    assert finishes(soft) == {"A": pytest.approx(5.02), "B": pytest.approx(0.02)}
    assert soft.summary.soft_deadlines_missed == ()


def test_a_cheap_soft_deadline_is_kept_although_its_price_in_the_score_is_lower():
    """Missing B: wmct (5 + 0.001 x 5.02) / 1.001 = 5.00002 h, priced + 0.001 / 1.001 h = 5.00102 h; keeping it:
    (0.001 x 0.02 + 5.02) / 1.001 = 5.01500 h. The score ranks the miss first; choose weighs it at 1 % of the
    weighted completion (5.00002 x 1.01 = 5.05002 > 5.01500) and keeps the deadline."""
    assert SOFT_MISS_SHARE == 0.01
    hybrid, soft = (night_checked(light_soft_queue(0.02), candidates=(name,)) for name in PAIR)
    assert priced_completion(hybrid) == pytest.approx(5.00102, abs=1e-5)
    assert soft.summary.weighted_mean_completion_hours == pytest.approx(5.01500, abs=1e-5)
    assert score(hybrid) < score(soft)
    assert choose([((*score(hybrid), 0), hybrid), ((*score(soft), 1), soft)]) is soft
    assert night_checked(light_soft_queue(0.02), candidates=PAIR).chosen == "dispatch-hybrid-soft"


def test_a_dear_soft_deadline_is_traded_away():
    """B of 0.2 h first delays A by 4 % of the weighted completion (5.2 / 1.001 = 5.1950 h against 5.0002 x 1.01 =
    5.0502 h): more than a miss's 1 %, so the plan that misses it stays."""
    hybrid, soft = (night_checked(light_soft_queue(0.2), candidates=(name,)) for name in PAIR)
    assert soft.summary.soft_deadlines_missed == () and hybrid.summary.soft_deadlines_missed == ("B",)
    assert choose([((*score(hybrid), 0), hybrid), ((*score(soft), 1), soft)]) is hybrid
    assert night_checked(light_soft_queue(0.2), candidates=PAIR).chosen == "dispatch-hybrid"


def test_choose_never_takes_more_soft_misses_than_the_best_scored_timeline():
    """Reversed roles: the best-scored timeline misses nothing, so a faster one that misses B is not a peer."""
    hybrid, soft = (night_checked(light_soft_queue(0.2), candidates=(name,)) for name in PAIR)
    # The soft plan ranked first by key (its candidate index 0 and a key made lower on purpose).
    assert choose([((0,) * 7, soft), ((*score(hybrid), 1), hybrid)]) is soft



def test_the_tight_soft_order_reaches_only_for_soft_deadlines_closer_than_half_an_hour():
    """B (0.02 h, soft deadline at 0.77 h) has 0.75 h of slack at 0 h: under SOFT_SLACK_HOURS (1 h), so
    hybrid-soft runs it first and keeps its deadline; over TIGHT_SOFT_SLACK_HOURS (0.5 h), so hybrid-soft-tight
    keeps Smith's rule, runs A first and B misses (one device: no event before A ends)."""
    assert TIGHT_SOFT_SLACK_HOURS < 0.75 < SOFT_SLACK_HOURS
    queue = workload(
        [device("g", "m", 1, [(100, 1.0)])],
        [job("A", work=5.0, p=1.0), job("B", work=0.02, p=1.0, weight=0.001, deadline_hours=0.77)],
    )
    plain, tight = (night_checked(queue, candidates=(name,)) for name in ("dispatch-hybrid-soft", TIGHT))
    assert finishes(plain) == {"A": pytest.approx(5.02), "B": pytest.approx(0.02)}
    assert plain.summary.soft_deadlines_missed == ()
    assert finishes(tight) == {"A": pytest.approx(5.0), "B": pytest.approx(5.02)}
    assert tight.summary.soft_deadlines_missed == ("B",)
