"""Night fields are validated with the rest of the queue, the core workload rejects them; plan_night rejects bad
arguments and budgets."""

from __future__ import annotations

import pytest

import optsched
from optsched import InvalidWorkload, Workload
from optsched.night import plan_night
from optsched.schema.night import NightQueue
from tests.night.conftest import START
from tests.support.factories import device, job, workload


def problems(data, kind=NightQueue) -> dict[str, str]:
    with pytest.raises(InvalidWorkload) as info:
        kind.load(data)
    return {e.path: e.message for e in info.value.errors}


def fleet():
    return [device("g", "m", 2, [(100, 1.0)], idle_w=10)]


def test_a_dependency_cycle_is_rejected_naming_every_job_on_it():
    found = problems(
        workload(
            fleet(),
            [job("a", after=["c"]), job("b", after=["a"]), job("c", after=["b"]), job("x"), job("y", after=["x"])],
        )
    )
    assert found == {"jobs[0].after": "dependency cycle through jobs ['a', 'b', 'c']: 'a' -> 'b' -> 'c' -> 'a'"}


def test_unknown_and_self_dependencies_and_every_cycle_are_listed_at_once():
    found = problems(workload(fleet(), [job("a", after=["a", "ghost"]), job("b", after=["c"]), job("c", after=["b"])]))
    assert found["jobs[0].after[0]"] == "job 'a' cannot come after itself"
    assert found["jobs[0].after[1]"] == "unknown job id 'ghost'"
    assert "['b', 'c']" in found["jobs[1].after"]


def test_windows_must_be_ordered_finite_non_negative_and_disjoint():
    bad = problems(workload(fleet(), [job("a")], power={"windows": [{"from_hours": 3, "to_hours": 2, "budget_w": 50}]}))
    assert "from_hours 3 must be < to_hours 2" in bad["power.windows[0]"]
    neg = problems(
        workload(
            fleet(),
            [job("a", release_hours=-1)],
            power={"windows": [{"from_hours": -1, "to_hours": 2, "budget_w": 50}]},
        )
    )
    assert "jobs[0].release_hours" in neg and "power.windows[0].from_hours" in neg
    overlap = problems(
        workload(
            fleet(),
            [job("a")],
            power={
                "windows": [
                    {"from_hours": 0, "to_hours": 10, "budget_w": 50},
                    {"from_hours": 1, "to_hours": 2, "budget_w": 50},
                    {"from_hours": 4, "to_hours": 5, "budget_w": 50},
                ]
            },
        )
    )
    assert set(overlap) == {"power.windows[1]", "power.windows[2]"}
    assert "overlaps window power.windows[0] (0-10 h)" in overlap["power.windows[2]"]


def test_the_core_workload_rejects_every_night_field_naming_its_path():
    w = workload(
        fleet(),
        [job("a", release_hours=2, checkpoint_hours=1), job("b", after=["a"], elastic=False)],
        power={"windows": [{"from_hours": 0, "to_hours": 1, "budget_w": 100}]},
        failures=[{"device": "g", "count": 1, "at_hours": 1, "repair_hours": 1}],
    )
    found = problems(w, Workload)
    assert set(found) == {
        "jobs[0].release_hours",
        "jobs[0].checkpoint_hours",
        "jobs[1].after",
        "jobs[1].elastic",
        "power.windows",
        "failures",
    }
    assert all("is a night-queue field" in m and "plan_night" in m for m in found.values())
    with pytest.raises(InvalidWorkload):
        optsched.plan(w)
    with pytest.raises(InvalidWorkload):  # a NightQueue object handed to the core is read again as a workload
        optsched.plan(NightQueue.load(w))
    assert NightQueue.load(w).jobs[1].after == ("a",)
    assert optsched.plan(workload(fleet(), [job("a")])).feasible
    unknown = problems(workload(fleet(), [job("a")], power={"budget": 5}), Workload)
    assert unknown == {"power.budget": "Extra inputs are not permitted"}


def test_failures_must_name_a_group_and_never_take_down_more_devices_than_it_has():
    found = problems(
        workload(
            fleet(),
            [job("a")],
            failures=[
                {"device": "ghost", "at_hours": 1, "repair_hours": 1},
                {"device": "g", "count": 2, "at_hours": 1, "repair_hours": 2},
                {"device": "g", "count": 1, "at_hours": 2, "repair_hours": 1},
            ],
        )
    )
    assert found == {
        "failures[0].device": "unknown device group 'ghost'",
        "failures[2].count": "3 devices of 'g' would be down at 2 h; the group has 2",
    }
    zero = problems(workload(fleet(), [job("a")], failures=[{"device": "g", "at_hours": 0.5, "repair_hours": 0}]))
    assert set(zero) == {"failures[0].repair_hours"}


def test_plan_night_rejects_bad_arguments_and_budgets_below_the_idle_draw_all_at_once():
    w = workload(
        fleet(),
        [job("a")],
        power={"budget_w": 5, "domains": {"r": 0}, "windows": [{"from_hours": 0, "to_hours": 1, "budget_w": 15}]},
    )
    w["devices"][0]["domain"] = "r"
    with pytest.raises(InvalidWorkload) as info:
        plan_night(w, start="tonight", hours=0, restart_hours=-1, time_limit_s=0, mip_gap=2)
    paths = {e.path for e in info.value.errors}
    assert paths == {
        "start",
        "hours",
        "restart_hours",
        "time_limit_s",
        "mip_gap",
        "power.budget_w",
        "power.windows[0].budget_w",
        "power.domains.r",
    }


def test_plan_night_warns_when_the_queue_asks_for_another_objective():
    plan = plan_night(workload(fleet(), [job("a")], objective="min_power"), start=START, hours=1)
    assert any("objective 'min_power' is not used" in w for w in plan.warnings)
