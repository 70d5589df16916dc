"""Conservative backfilling keeps one profile of devices and draw per event, updated as jobs start and reserve
(optsched.baselines.night): at every instant a reservation is sought, the profile equals the devices and draw
summed afresh from what runs and what is reserved then, and every timeline verifies."""

from __future__ import annotations

import math
from unittest import mock

import pytest
from hypothesis import given, settings

from optsched.baselines import night as baselines
from tests.night.conftest import night_checked
from tests.night.night_factories import night_queues
from tests.support.factories import device, job, workload


class CheckedProfile:
    """Conservative backfilling's reservation search, the profile it reads compared first with one computed from
    scratch at each of its instants."""

    checked = 0
    search = staticmethod(baselines.ConservativePolicy._reserve_beside)

    @staticmethod
    def reserve_beside(view, j, want, profile):
        out = profile.states
        # Now, and every end after now of what runs or is reserved: the instants a reservation may start.
        ends = {profile.view.t, *(to for _, to, _ in profile.items if profile.view.t < to < math.inf)}
        assert [at for at, _ in out] == sorted(ends)
        for at, state in out:
            fresh = profile._state(at)
            assert state.free == fresh.free, at
            assert math.isclose(state.total, fresh.total, rel_tol=1e-12, abs_tol=1e-9), at
            assert state.by_domain.keys() == fresh.by_domain.keys()
            for d, w in fresh.by_domain.items():
                assert math.isclose(state.by_domain[d], w, rel_tol=1e-12, abs_tol=1e-9), (at, d)
            assert state.budget == fresh.budget
            CheckedProfile.checked += 1
        return CheckedProfile.search(view, j, want, profile)


def checked():
    return mock.patch.object(
        baselines.ConservativePolicy, "_reserve_beside", staticmethod(CheckedProfile.reserve_beside)
    )


@settings(max_examples=40, deadline=None)
@given(night_queues(max_jobs=8))
def test_the_profile_equals_a_fresh_sum_at_every_instant(queue):
    with checked():
        night_checked(queue, "conservative")


def test_a_crowded_queue_reserves_beside_earlier_reservations_and_the_budget():
    # Six 2-device jobs on 3 devices under a budget for 2 of them at full cap: every job but the first waits, and
    # each reservation is sought beside those made before it, at instants the profile keeps.
    devices = [device("g0", "fast", 3, [(100.0, 1.0)], idle_w=10.0)]
    jobs = [job(f"j{k}", work=1.0, p=1.0, min_devices=2, max_devices=2) for k in range(6)]
    queue = workload(devices, jobs, power={"budget_w": 30 + 2 * 90})
    CheckedProfile.checked = 0
    with checked():
        plan = night_checked(queue, "conservative")
    assert CheckedProfile.checked > 0
    starts = sorted(t.start_hours for t in plan.jobs)
    # One job at a time (2 of 3 devices, and the budget holds 2 devices' draw above idle): 0.5 h each.
    assert starts == pytest.approx([0.0, 0.5, 1.0, 1.5, 2.0, 2.5])
