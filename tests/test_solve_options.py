"""SolveOptions: one typed object says how to solve; plan() keywords and options= mean the same."""

from __future__ import annotations

import dataclasses

import pytest

import optsched
from tests.support.factories import device, job, workload


def small() -> dict:
    devices = [device("g", "gpu", 2, [(100.0, 1.0), (200.0, 2.0)])]
    return workload(devices, [job("a", work=4.0, p=0.9, max_devices=2), job("b", work=2.0, p=0.5)],
                    power={"budget_w": 300})


def test_options_are_frozen_and_checked():
    options = optsched.SolveOptions(time_limit_s=5, threads=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.threads = 2  # type: ignore[misc]
    assert options.replace(threads=2).threads == 2 and options.threads == 1
    for bad in ({"backend": "cplex"}, {"time_limit_s": 0}, {"mip_gap": 1.5}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            optsched.SolveOptions(**bad)


def test_options_object_and_keywords_give_the_same_verified_plan():
    seen: list[optsched.Plan] = []
    by_object = optsched.plan(small(), options=optsched.SolveOptions(mip_gap=0.0, on_incumbent=seen.append))
    by_keywords = optsched.plan(small(), mip_gap=0.0)
    assert by_object.status is by_keywords.status is optsched.Status.optimal
    assert by_object.objective == pytest.approx(by_keywords.objective, rel=1e-9)
    assert optsched.verify(small(), by_object) == []
    assert seen, "on_incumbent given in the options object was never called"


def test_keywords_override_the_options_object():
    calls: list[tuple] = []
    optsched.plan(small(), options=optsched.SolveOptions(progress=lambda *e: calls.append(("object", e))),
                  progress=lambda *e: calls.append(("keyword", e)))
    assert calls and {who for who, _ in calls} == {"keyword"}
