"""The change document: validated on its own and against the workload and plan, every problem with its path."""

from __future__ import annotations

import json

import pytest

from optsched import InvalidPlan, InvalidWorkload
from optsched.replan import Change, InvalidChange, apply_change, replan
from optsched.schema.workload import Workload
from tests.replan.conftest import plan_checked
from tests.support.factories import device, job, workload

BASE = workload(
    [device("g1", "m1", 4, [(100.0, 1.0)], domain="r1"), device("g2", "m2", 2, [(200.0, 2.0)], domain="r2")],
    [job("a", priority="high"), job("b"), job("c", priority="low")],
    power={"budget_w": 900, "domains": {"r1": 500}},
)


def paths(exc: InvalidWorkload) -> list[str]:
    return [e.path for e in exc.errors]


def test_own_problems_are_all_reported_with_paths():
    with pytest.raises(InvalidChange) as info:
        Change.load(
            {
                "device_failures": [{"device": "g1", "count": 2.0}, {"device": "", "count": 0}],
                "budget_w": "9000",
                "domains": {"r1": -1},
                "add_jobs": [{"id": "n", "work_hours": -1, "parallel_fraction": 0.5}],
                "remove_jobs": "a",
                "surprise": 1,
            }
        )
    assert set(paths(info.value)) == {
        "device_failures[0].count", "device_failures[1].device", "device_failures[1].count", "budget_w",
        "domains.r1", "add_jobs[0].work_hours", "remove_jobs", "surprise",
    }
    assert str(info.value).startswith("invalid change (8 problem(s))")
    assert isinstance(info.value, InvalidWorkload)  # every handler of bad input takes it


def test_bools_and_strings_are_not_numbers():
    for bad in ({"budget_w": True}, {"device_failures": [{"device": "g1", "count": True}]}, {"budget_w": float("nan")}):
        with pytest.raises(InvalidChange):
            Change.load(bad)


def test_duplicates_and_removed_pins():
    with pytest.raises(InvalidChange) as info:
        Change.load({"remove_jobs": ["a", "a"], "pin": ["b", "b", "a"], "add_jobs": [job("x"), job("x")]})
    assert paths(info.value) == ["remove_jobs[1]", "pin[1]", "add_jobs[1].id", "pin[2]"]


def test_problems_against_the_workload():
    change = {
        "device_failures": [{"device": "g9", "count": 1}, {"device": "g2", "count": 3}],
        "device_repairs": [{"device": "g8", "count": 1}],
        "remove_jobs": ["zz"],
        "add_jobs": [job("a"), job("d")],
        "pin": ["ghost"],
    }
    with pytest.raises(InvalidChange) as info:
        apply_change(Workload.load(BASE), change)
    assert paths(info.value) == [
        "device_repairs[0].device", "device_failures[0].device", "device_failures[1].count", "remove_jobs[0]",
        "add_jobs[0].id", "pin[0]",
    ]
    assert "group 'g2' has 2 devices; 3 failures listed for it" in str(info.value)


def test_a_new_jobs_own_problem_is_reported_at_its_path_in_the_change():
    with pytest.raises(InvalidChange) as info:
        apply_change(Workload.load(BASE), {"add_jobs": [job("d"), job("e", min_devices=3, max_devices=2)]})
    assert paths(info.value) == ["add_jobs[1].min_devices"]


def test_every_device_failing_is_an_error():
    with pytest.raises(InvalidChange) as info:
        apply_change(
            Workload.load(BASE), {"device_failures": [{"device": "g1", "count": 4}, {"device": "g2", "count": 2}]}
        )
    assert paths(info.value) == ["device_failures"]


def test_apply_change_never_mutates_and_does_what_it_says():
    before = Workload.load(BASE)
    snapshot = before.model_dump()
    after = apply_change(
        before,
        {
            "device_failures": [{"device": "g1", "count": 3}, {"device": "g2", "count": 2}],
            "device_repairs": [{"device": "g1", "count": 1}],
            "budget_w": 700,
            "domains": {"r2": 300},
            "remove_jobs": ["b"],
            "add_jobs": [job("d")],
        },
    )
    assert before.model_dump() == snapshot
    assert [(g.id, g.count) for g in after.devices] == [("g1", 2)]  # g2 lost both devices: dropped
    assert after.power.budget_w == 700 and after.power.domains == {"r1": 500, "r2": 300}
    assert [j.id for j in after.jobs] == ["a", "c", "d"]


def test_change_from_json_text_and_file(tmp_path):
    text = json.dumps({"budget_w": 800})
    assert Change.load(text).budget_w == 800
    path = tmp_path / "c.json"
    path.write_text(text)
    assert Change.load(path).budget_w == 800
    with pytest.raises(InvalidChange) as info:
        Change.load(tmp_path / "missing.json")
    assert paths(info.value) == [""]


def test_pin_of_a_job_not_running_and_plan_mismatch():
    current = plan_checked(BASE)
    waiting = [p.job for p in current.placements if not p.admitted]
    running = [p.job for p in current.placements if p.admitted]
    assert running and waiting
    with pytest.raises(InvalidChange) as info:
        replan(BASE, current, {"pin": [running[0], waiting[0]], "remove_jobs": ["nobody"]})
    assert paths(info.value) == ["remove_jobs[0]", "pin[1]"]
    other = {**BASE, "jobs": [j for j in BASE["jobs"] if j["id"] != running[0]], "devices": BASE["devices"][:1]}
    with pytest.raises(InvalidPlan) as info:
        replan(other, current, {})
    assert any(e.path.endswith(".job") for e in info.value.errors)
