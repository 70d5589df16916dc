"""Issue 25: a re-plan obeys the size limits a plan obeys, and `check_change` refuses before any work what the
re-plan would refuse later: a changed workload above the limits, repairs beyond a group's original count, a pin
of a job the plan does not run. Each at the change's field."""

from __future__ import annotations

import time

import pytest

from optsched.replan import InvalidChange, apply_change, check_change, replan
from optsched.schema.limits import Limits
from optsched.schema.workload import Workload
from tests.replan.conftest import plan_checked
from tests.support.factories import device, job, workload

# 'a' runs; 'hog' needs more devices than there are, so the plan does not run it.
BASE = workload(
    [device("g1", "m1", 4, [(100.0, 1.0), (60.0, 0.7)])],
    [job("a", work=2.0), job("hog", min_devices=8, priority="low")],
)
LIMITS = Limits(jobs=5_000, devices=10_000, device_groups=1_000, levels=32, time_limit_s=300.0, variables=2_000_000)


@pytest.fixture(scope="module")
def current():
    plan = plan_checked(BASE)
    assert {p.job for p in plan.placements if p.admitted} == {"a"}
    return plan


def paths(exc: InvalidChange) -> list[str]:
    return [e.path for e in exc.errors]


@pytest.mark.slow
def test_forty_thousand_added_jobs_are_refused_before_any_work(current):
    change = {"add_jobs": [job(f"j{i}") for i in range(40_000)]}
    started = time.process_time()
    with pytest.raises(InvalidChange) as info:
        check_change(BASE, current, change, limits=LIMITS)
    assert paths(info.value) == ["add_jobs"]
    assert "40,002 jobs, above the limit of 5,000 (OPTSCHED_MAX_JOBS)" in str(info.value)
    assert time.process_time() - started < 30  # validation only: no model is built
    with pytest.raises(InvalidChange):
        replan(BASE, current, change, limits=LIMITS)


def test_placement_variables_of_the_changed_workload_are_bounded(current):
    with pytest.raises(InvalidChange) as info:
        check_change(BASE, current, {"add_jobs": [job("x"), job("y")]}, limits=Limits(variables=7))
    assert paths(info.value) == ["add_jobs"] and "OPTSCHED_MAX_VARIABLES" in str(info.value)


def test_repairs_never_give_a_group_more_devices_than_it_had(current):
    with pytest.raises(InvalidChange) as info:
        check_change(BASE, current, {"device_repairs": [{"device": "g1", "count": 999_990}]}, limits=LIMITS)
    assert paths(info.value) == ["device_repairs[0].count"]
    assert "would have 999,994 devices after the repairs; it had 4" in str(info.value)
    # A repair that brings back a device failing in the same change is fine.
    both = {"device_failures": [{"device": "g1", "count": 2}], "device_repairs": [{"device": "g1", "count": 1}]}
    after = check_change(BASE, current, both)
    assert after.devices[0].count == 3


def test_a_chain_of_replans_repairs_up_to_the_original_count():
    smaller = apply_change(Workload.load(BASE), {"device_failures": [{"device": "g1", "count": 2}]})
    repair = {"device_repairs": [{"device": "g1", "count": 2}]}
    with pytest.raises(InvalidChange):
        apply_change(smaller, repair)
    assert apply_change(smaller, repair, original=Workload.load(BASE)).devices[0].count == 4
    with pytest.raises(InvalidChange) as info:
        apply_change(smaller, {"device_repairs": [{"device": "g1", "count": 3}]}, original=Workload.load(BASE))
    assert paths(info.value) == ["device_repairs[0].count"]


def test_pinning_a_job_that_is_not_running_is_refused_at_its_index(current):
    for pin, add in ((["a", "hog"], []), (["a", "new"], [job("new")])):
        with pytest.raises(InvalidChange) as info:
            check_change(BASE, current, {"pin": pin, "add_jobs": add}, limits=LIMITS)
        assert paths(info.value) == ["pin[1]"]
        assert "not running in the plan" in str(info.value)


def test_a_valid_change_gives_the_changed_workload(current):
    after = check_change(BASE, current, {"pin": ["a"], "budget_w": 500.0}, limits=LIMITS)
    assert after.power.budget_w == 500.0 and [j.id for j in after.jobs] == ["a", "hog"]
