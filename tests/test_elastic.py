"""What it would take: suggestions for infeasible workloads, and the workload with them applied is feasible."""

from __future__ import annotations

import pytest
from hypothesis import given

import optsched
from optsched import Status, Workload
from optsched.explain.suggestions import apply_suggestions, suggest_changes
from tests.conftest import plan_checked
from tests.support.factories import device, job, tiny_workloads, workload


def fleet(**power):
    return workload(
        [device("a", "A100", 4, [(400, 2.0), (250, 1.5)], memory_gb=80, domain="rack1", idle_w=50),
         device("b", "L4", 4, [(72, 0.6), (40, 0.4)], memory_gb=24, domain="rack2", idle_w=10)],
        [job("train", work=40, p=0.95, priority="high", deadline_hours=8, allowed_models=["A100"]),
         job("eval", work=4, p=0.8, priority="critical", deadline_hours=6),
         job("sweep", work=20, p=0.99, priority="low")],
        power=power,
    )


def fixed(w, suggestions):
    result = plan_checked(apply_suggestions(Workload.load(w), suggestions))
    assert result.status == Status.optimal, result.diagnosis
    return result


def test_budget_short_by_a_little_suggests_raising_that_budget():
    # train (S >= 5) needs at least 4 A100s at 250 W = 1,000 W in rack1; the budget is 900 W.
    w = fleet(domains={"rack1": 900})
    assert optsched.plan(w).status == Status.infeasible
    suggestions = suggest_changes(Workload.load(w))
    assert [s.kind for s in suggestions] == ["raise_budget"]
    s = suggestions[0]
    assert s.target == "power.domains.rack1" and s.current == 900 and s.needed > 900
    assert "raise the rack1 budget by" in s.message
    fixed(w, suggestions)
    # The raise is the smallest that works: a budget 2 W lower is still infeasible.
    lower = apply_suggestions(Workload.load(w), [s.model_copy(update={"needed": s.needed - 2})])
    assert optsched.plan(lower).status == Status.infeasible


def test_deadline_out_of_reach_suggests_the_smallest_extension():
    w = fleet()
    w["jobs"][0]["deadline_hours"] = 4  # best on 4 A100s at 400 W: 40 / S(4 x 2.0) = 5.79 h
    assert optsched.plan(w).status == Status.infeasible
    suggestions = suggest_changes(Workload.load(w))
    assert [s.kind for s in suggestions] == ["extend_deadline"]
    assert suggestions[0].target == "jobs[0].deadline_hours"
    assert suggestions[0].needed == pytest.approx(40 / (1 / (0.05 / 2.0 + 0.95 / 8.0)), abs=0.011)
    fixed(w, suggestions)


def test_memory_no_device_has_suggests_what_exists():
    w = fleet()
    w["jobs"][0]["memory_gb"] = 120
    suggestions = suggest_changes(Workload.load(w))
    assert suggestions[0].kind == "lower_memory" and suggestions[0].needed == 80
    assert "no device has 120 GB of memory" in suggestions[0].message
    fixed(w, suggestions)


def test_feasible_workload_needs_no_change():
    assert suggest_changes(Workload.load(fleet())) == []


@pytest.mark.slow
@given(tiny_workloads(max_jobs=4, max_groups=2, max_count=4))
def test_applying_the_suggestions_always_gives_a_feasible_workload(w):
    suggestions = suggest_changes(Workload.load(w))
    result = plan_checked(apply_suggestions(Workload.load(w), suggestions))
    assert result.status in (Status.optimal, Status.time_limit), (suggestions, result.diagnosis)
