"""Night fields are validated with the rest of the workload; plan_night rejects bad arguments and budgets."""

from __future__ import annotations

import pytest

import optsched
from optsched import InvalidWorkload, Workload
from optsched.night import plan_night
from optsched.testing.factories import device, job, workload
from tests.night.conftest import START


def problems(data) -> dict[str, str]:
    with pytest.raises(InvalidWorkload) as info:
        Workload.load(data)
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


def test_the_core_planner_accepts_night_fields_and_warns_that_it_ignores_them():
    w = workload(
        fleet(),
        [job("a", release_hours=2), job("b", after=["a"])],
        power={"windows": [{"from_hours": 0, "to_hours": 1, "budget_w": 100}]},
    )
    result = optsched.plan(w)
    assert result.feasible
    assert any("used by plan_night only" in warning for warning in result.warnings)
    assert not any("plan_night only" in warning for warning in optsched.plan(workload(fleet(), [job("a")])).warnings)


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
