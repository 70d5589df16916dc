"""The fairness objectives (max_min_speedup, team_max_min): exhaustive-search optima on tiny workloads, the
verifier's recomputation, infeasibility naming the night planner, and every face (Python, CLI, REST schema)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

import optsched
from optsched import OBJECTIVES, Status
from optsched.cli import app
from optsched.schema.tolerances import FAIRNESS_TOLERANCE
from optsched.schema.workload import OBJECTIVE_NAMES
from tests.conftest import plan_checked
from tests.fair_oracle import fairness, max_min, most_weighted
from tests.support.factories import device, job, tiny_workloads, workload

FAIR = ("max_min_speedup", "team_max_min")
EXACT = {"time_limit_s": 20, "mip_gap": 1e-7}


def assert_matches_exhaustive_search(w: dict[str, Any]) -> optsched.Plan:
    """The plan verifies; its bound is the max-min of exhaustive search, its fairness within the tolerance of it,
    its weighted speedup the most among the plans that keep the floor, and its solo speedups the oracle's."""
    best, found = max_min(w)
    plan = plan_checked(w)
    if best is None:
        assert plan.status is Status.infeasible, plan
        return plan
    assert plan.status is Status.optimal, (plan.status, plan.warnings)
    assert plan.bound == pytest.approx(best, rel=1e-5, abs=1e-9)
    assert plan.objective == plan.fairness
    assert (1 - FAIRNESS_TOLERANCE) * best * (1 - 1e-6) <= plan.fairness <= best * (1 + 1e-6)
    assert plan.fairness == pytest.approx(fairness(w, found.solo, {p.job: p.speedup for p in plan.placements}))
    for p in plan.placements:
        assert p.solo_speedup == pytest.approx(found.solo[p.job], rel=1e-6)
    floor = (1 - FAIRNESS_TOLERANCE) * best
    assert plan.weighted_speedup >= most_weighted(w, found, floor * (1 + 1e-6)) * (1 - 1e-5) - 1e-9
    assert plan.weighted_speedup <= most_weighted(w, found, floor * (1 - 1e-5)) * (1 + 1e-5) + 1e-9
    return plan


def test_the_registry_and_the_schema_name_the_same_objectives_and_each_one_plans():
    assert tuple(OBJECTIVES) == OBJECTIVE_NAMES
    schema = optsched.Workload.model_json_schema()["properties"]["objective"]
    assert schema["enum"] == list(OBJECTIVES)
    for name in OBJECTIVES:
        w = workload([device("g", "m", 3, [(100, 1.0)])], [job("a", p=0.9), job("b", p=0.5)], objective=name)
        assert plan_checked(w).status is Status.optimal, name


def test_weights_set_the_shares_of_max_min_speedup():
    # p = 1, 4 identical devices: S = devices, S^solo = 4. min(n_a / 4, n_b / (3 * 4)) is best at (1, 3): 0.25;
    # unweighted the best is (2, 2): 0.5.
    devices = [device("g", "m", 4, [(100, 1.0)])]
    weighted = workload(devices, [job("a", p=1.0), job("b", p=1.0, weight=3.0)], objective="max_min_speedup", **{
        "options": EXACT})
    plan = assert_matches_exhaustive_search(weighted)
    assert [sum(a.count for a in p.allocations) for p in plan.placements] == [1, 3]
    assert plan.fairness == pytest.approx(0.25)
    even = workload(devices, [job("a", p=1.0), job("b", p=1.0)], objective="max_min_speedup", options=EXACT)
    assert assert_matches_exhaustive_search(even).fairness == pytest.approx(0.5)


def test_team_max_min_shares_the_fleet_between_teams_not_jobs():
    # p = 1, 6 devices, S^solo = 6. Team x has two jobs, y one: equal shares give x 3 devices and y 3 (value
    # (3/6) / 0.5 = 1); over jobs (max_min_speedup) each would get 2. Shares x:2, y:1 give x 4 and y 2.
    devices = [device("g", "m", 6, [(100, 1.0)])]
    jobs = [job("a", p=1.0, team="x"), job("b", p=1.0, team="x"), job("c", p=1.0, team="y")]
    equal = workload(devices, jobs, objective="team_max_min", options=EXACT)
    plan = assert_matches_exhaustive_search(equal)
    held = {t.team: t.devices for t in plan.teams}
    assert held == {"x": 3, "y": 3} and plan.fairness == pytest.approx(1.0)
    assert [t.share for t in plan.teams] == [0.5, 0.5]
    shared = {**equal, "teams": {"x": 2.0, "y": 1.0}}
    plan = assert_matches_exhaustive_search(shared)
    assert {t.team: t.devices for t in plan.teams} == {"x": 4, "y": 2}
    jobs_only = assert_matches_exhaustive_search({**equal, "objective": "max_min_speedup"})
    assert [sum(a.count for a in p.allocations) for p in jobs_only.placements] == [2, 2, 2]


def test_solo_speedups_respect_the_budget_and_the_second_solve_recovers_throughput():
    # The budget lets a job alone run 3 devices at 100 W or 1 at 200 W (speed 2): S^solo comes from a solve.
    w = workload(
        [device("g", "m", 4, [(200, 2.0), (100, 1.0)])],
        [job("a", p=0.5), job("b", p=0.99, priority="low"), job("c", p=0.9, weight=2.0)],
        power={"budget_w": 300},
        objective="max_min_speedup",
        options=EXACT,
    )
    assert_matches_exhaustive_search(w)
    assert_matches_exhaustive_search({**w, "objective": "team_max_min"})


def test_not_every_job_fitting_is_infeasible_with_the_night_planner_suggested():
    w = workload([device("g", "m", 3, [(100, 1.0)])], [job("a", min_devices=2), job("b", min_devices=2)],
                 objective="max_min_speedup")
    plan = plan_checked(w)
    assert plan.status is Status.infeasible
    assert any("night planner" in reason for reason in plan.diagnosis)
    assert [s.kind for s in plan.suggestions if s.kind == "plan_night"] == ["plan_night"]


def test_the_verifier_recomputes_fairness_and_flags_a_mismatch():
    w = workload([device("g", "m", 4, [(100, 1.0)])], [job("a", p=0.9, team="x"), job("b", p=0.5, team="y")],
                 objective="team_max_min")
    plan = plan_checked(w)
    assert plan.fairness is not None
    assert any(v.startswith("fairness:") for v in optsched.verify(w, plan.model_copy(
        update={"fairness": plan.fairness * 1.1})))
    assert any("team_max_min = " in v for v in optsched.verify(w, plan.model_copy(
        update={"objective": plan.fairness * 1.1})))
    too_fast = plan.placements[0].model_copy(update={"solo_speedup": 100.0})
    assert any("above its speedup on its fastest devices" in v for v in optsched.verify(
        w, plan.model_copy(update={"placements": (too_fast, *plan.placements[1:])})))
    teams = (plan.teams[0].model_copy(update={"devices": 4}), *plan.teams[1:])
    assert any(v.startswith("team 'x'") for v in optsched.verify(w, plan.model_copy(update={"teams": teams})))
    dropped = plan.placements[1].model_copy(update={"admitted": False, "allocations": (), "speedup": 0.0,
                                                     "runtime_hours": None})
    assert any("requires every job to be admitted" in v for v in optsched.verify(
        w, plan.model_copy(update={"placements": (plan.placements[0], dropped)})))


def test_teams_are_validated_against_the_jobs():
    bad = workload([device("g", "m", 2, [(100, 1.0)])], [job("a", team="x"), job("b")], teams={"x": 1.0})
    with pytest.raises(optsched.InvalidWorkload) as info:
        optsched.Workload.load(bad)
    assert [e.path for e in info.value.errors] == ["jobs[1].team"]


def test_cli_plans_a_fairness_objective(tmp_path):
    w = workload([device("g", "m", 4, [(100, 1.0)])], [job("a", p=1.0, team="x"), job("b", p=0.5, team="y")],
                 objective="team_max_min")
    path = tmp_path / "w.json"
    path.write_text(json.dumps(w))
    result = CliRunner().invoke(app, ["plan", str(path), "--table"])
    assert result.exit_code == 0, result.output
    assert "team_max_min" in result.stdout and "fairness" in result.stdout


@st.composite
def fair_workloads(draw) -> dict[str, Any]:
    w = draw(tiny_workloads())
    teams = draw(st.sampled_from([None, ["x"], ["x", "y"]]))
    if teams:
        w["jobs"] = [{**j, "team": draw(st.sampled_from(teams))} for j in w["jobs"]]
        if draw(st.booleans()):
            w["teams"] = {t: draw(st.sampled_from([0.5, 1.0, 3.0])) for t in teams}
    return {**w, "objective": draw(st.sampled_from(FAIR))}


@pytest.mark.slow
@given(fair_workloads())
def test_random_tiny_workloads_match_exhaustive_search_and_verify(w):
    assert_matches_exhaustive_search(w)
