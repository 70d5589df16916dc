"""The one MILP candidate of the mid-size nights (MILP_MAX_JOBS < jobs <= MID_MILP_MAX_JOBS): which it is, its
looser per-event gap, and its timeline through the verifier."""

from __future__ import annotations

import pytest

from optsched.night.milp import NIGHT_MIP_GAP, NIGHT_TIME_LIMIT_S, MilpPolicy, validate_night
from optsched.night.planner import MID_MILP_GAP, MID_MILP_MAX_JOBS, MILP_MAX_JOBS, candidate_policies
from tests.night.conftest import START, night_checked
from tests.support.factories import device, job, workload


def queue(jobs: int, soft: bool) -> dict:
    """`jobs` short jobs on eight devices; every other one has a soft deadline when `soft`."""
    return workload(
        [device("a", "m", 4, [(100, 1.0), (200, 1.5)]), device("b", "n", 4, [(150, 2.0)])],
        [
            job(f"j{i:03d}", work=0.2 + 0.05 * (i % 5), p=0.9, max_devices=2,
                **({"deadline_hours": 1.0 + 0.1 * i} if soft and i % 2 else {}))
            for i in range(jobs)
        ],
    )


def milps(jobs: int, soft: bool) -> list[MilpPolicy]:
    night_queue, _ = validate_night(queue(jobs, soft), start=START, hours=8.0)
    policies = candidate_policies(night_queue, hours=8.0, time_limit_s=NIGHT_TIME_LIMIT_S, mip_gap=NIGHT_MIP_GAP)
    return [p for p in policies if isinstance(p, MilpPolicy)]


@pytest.mark.parametrize(("soft", "name"), [(True, "milp-soft"), (False, "milp")])
def test_a_mid_size_night_has_one_milp_candidate_at_the_looser_gap(soft, name):
    found = milps(MILP_MAX_JOBS + 1, soft)
    assert [p.name for p in found] == [name]
    assert found[0].mip_gap == max(NIGHT_MIP_GAP, MID_MILP_GAP)
    assert found[0].wsrpt and found[0].soft == soft


def test_the_small_nights_keep_their_milp_candidates_and_the_large_have_none():
    assert [p.name for p in milps(MILP_MAX_JOBS, True)] == ["milp", "milp-soft", "milp-classic"]
    assert all(p.mip_gap == NIGHT_MIP_GAP for p in milps(MILP_MAX_JOBS, True))
    assert milps(MID_MILP_MAX_JOBS + 1, True) == []


@pytest.mark.slow
def test_the_mid_size_milp_plans_a_verified_night():
    plan = night_checked(queue(MILP_MAX_JOBS + 1, True), candidates=("milp-soft",))
    assert plan.chosen == "milp-soft"
    assert not plan.summary.never_ran
    assert len(plan.jobs) == MILP_MAX_JOBS + 1
