"""Fairness over the night in the summary: finish-time fairness rho and each team's share of the device-hours,
hand-computed on tiny queues and recomputed by the timeline verifier."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optsched.night import plan_night
from optsched.night.bound import night_bound
from optsched.night.fairness import night_fairness, progress_by_morning, progress_weights
from optsched.night.planner import CANDIDATE_NAMES
from optsched.schema.night import NightQueue as Queue
from optsched.verify.timeline import verify_timeline
from tests.night.conftest import START, night_checked
from tests.night.night_factories import night_queues
from tests.support.factories import device, job, workload


def test_one_job_alone_has_rho_one_and_every_device_hour():
    # n = 1: the equal share is the whole fleet, 2 devices at speed 1, p = 1: T^equal = 4 / 2 = 2 h, run as planned.
    queue = workload([device("g", "m", 2, [(100, 1.0)])], [job("a", work=4.0, p=1.0, team="x")])
    plan = night_checked(queue, hours=8)
    assert plan.summary.max_rho == pytest.approx(1.0)
    (team,) = plan.summary.teams
    assert (team.team, team.jobs, team.never_ran) == ("x", 1, 0)
    assert team.device_hours == pytest.approx(4.0) and team.device_hours_share == pytest.approx(1.0)


def test_team_shares_of_device_hours_and_worst_rho_match_the_timeline():
    # Two p = 1 jobs of 2 h on 2 devices: the equal share is one device each, T^equal = 2 h. Whatever the order,
    # the later job finishes at 2 h (rho 1) and both teams hold 2 device-hours each.
    queue = workload(
        [device("g", "m", 2, [(100, 1.0)])],
        [job("a", work=2.0, p=1.0, team="x"), job("b", work=2.0, p=1.0, team="y")],
    )
    plan = night_checked(queue, hours=8)
    assert plan.summary.max_rho == pytest.approx(1.0)
    assert {t.team: round(t.device_hours, 6) for t in plan.summary.teams} == {"x": 2.0, "y": 2.0}
    assert [t.share for t in plan.summary.teams] == [0.5, 0.5]
    tampered = plan.summary.model_copy(update={"teams": (
        plan.summary.teams[0].model_copy(update={"device_hours": 3.0}), *plan.summary.teams[1:])})
    problems = verify_timeline(queue, plan.model_copy(update={"summary": tampered}))
    assert any("team 'x' reports 3 device-hours" in p for p in problems), problems


def test_without_teams_the_summary_lists_none():
    plan = plan_night(workload([device("g", "m", 1, [(100, 1.0)])], [job("a", work=1.0)]), start=START, hours=4)
    assert plan.summary.teams == () and plan.summary.max_rho is not None


@pytest.mark.slow
@given(
    night_queues(), st.sampled_from([["x"], ["x", "y"]]),
    st.sampled_from(["weighted_speedup", "max_min_speedup", "team_max_min"]),
    st.sampled_from(["progress", "finish_time"]),
)
def test_random_queues_report_team_shares_the_verifier_recomputes(queue, teams, objective, fairness):
    # Every timeline verifies, its rho, team shares and fairness by morning recomputed by the verifier.
    queue = {**queue, "jobs": [{**j, "team": teams[k % len(teams)]} for k, j in enumerate(queue["jobs"])],
             "objective": objective, "night_fairness": fairness}
    plan = night_checked(queue, hours=8)
    assert (plan.summary.fairness is None) == (objective == "weighted_speedup")
    ran = [t for t in plan.summary.teams if t.device_hours > 0]
    if ran:
        assert sum(t.device_hours_share for t in plan.summary.teams) == pytest.approx(1.0)
    # The bounds hold for every timeline, this one included (fair_bound's relaxation).
    bound = plan.summary.bound
    if bound is not None and plan.summary.fairness is not None and bound.fairness_bound is not None:
        assert plan.summary.fairness <= bound.fairness_bound + 1e-9
    if bound is not None and bound.max_rho_bound is not None and not plan.summary.never_ran:
        assert plan.summary.max_rho is not None and plan.summary.max_rho >= bound.max_rho_bound - 1e-9


def _team_queue(*, devices: int, x_work: float, y_work: float) -> dict:
    """Team x's jobs a and b of x_work hours, team y's job c of y_work hours, p = 1, on `devices` devices."""
    return workload(
        [device("g", "m", devices, [(100, 1.0)])],
        [job("a", work=x_work, p=1.0, team="x"), job("b", work=x_work, p=1.0, team="x"),
         job("c", work=y_work, p=1.0, team="y")],
        objective="team_max_min",
    )


def test_a_fairness_objective_picks_the_fairest_candidate_timeline():
    # Two devices, team x's two 4 h jobs and team y's 1 h job, a 3 h night: the candidates differ in how much of
    # each team's work is done by morning. After deadlines and jobs never run, the fairest by morning is chosen.
    queue = _team_queue(devices=2, x_work=4.0, y_work=1.0)
    plan = night_checked(queue, hours=3)
    assert not any("is not used" in w for w in plan.warnings)
    chosen = night_fairness(Queue.load(queue), plan.jobs, 3)
    for name in CANDIDATE_NAMES:
        alone = night_checked(queue, hours=3, candidates=(name,))
        if len(alone.summary.hard_deadlines_missed) == 0 and len(alone.summary.never_ran) == len(
                plan.summary.never_ran):
            assert night_fairness(Queue.load(queue), alone.jobs, 3) <= chosen + 1e-9, name


def test_progress_by_morning_counts_the_work_done_before_the_night_ends():
    queue = workload([device("g", "m", 1, [(100, 1.0)])], [job("a", work=4.0, p=1.0)])
    plan = night_checked(queue, hours=2)
    assert progress_by_morning(plan.jobs, 2.0) == {"a": pytest.approx(0.5)}
    assert progress_by_morning(plan.jobs, 8.0) == {"a": pytest.approx(1.0)}


def _two_teams(objective: str, night_fairness_: str = "progress") -> dict:
    """8 devices; team par: three 40 h jobs with p = 1; team comm: two 12 h jobs with p = 0.6. Over an 8 h night
    weighted shortest remaining time runs the par jobs one after the other on every device and comm last."""
    return workload(
        [device("g", "m", 8, [(300, 1.0)])],
        [*(job(f"p{i}", work=40.0, p=1.0, team="par") for i in range(3)),
         *(job(f"c{i}", work=12.0, p=0.6, team="comm") for i in range(2))],
        objective=objective, night_fairness=night_fairness_,
    )


def test_each_event_milp_follows_the_fairness_objective_over_the_night():
    weighted = night_checked(_two_teams("weighted_speedup"), hours=8, candidates=("milp",))
    teams = night_checked(_two_teams("team_max_min"), hours=8, candidates=("milp",))
    rho = night_checked(_two_teams("max_min_speedup", "finish_time"), hours=8, candidates=("milp",))
    by_team = Queue.load(_two_teams("team_max_min"))
    # Weighted: team comm does nothing by morning; the progress weights start it at once.
    assert night_fairness(by_team, weighted.jobs, 8) == pytest.approx(0.0)
    assert night_fairness(by_team, teams.jobs, 8) > 1.0
    assert teams.summary.fairness == pytest.approx(night_fairness(by_team, teams.jobs, 8))
    assert weighted.summary.fairness is None
    # Finish-time weights lower the largest rho (2.3 under weighted, comm finishing last).
    assert rho.summary.max_rho < 1.0 < weighted.summary.max_rho
    assert rho.summary.max_rho <= teams.summary.max_rho + 1e-9


def test_progress_weights_favour_whoever_is_furthest_behind_its_share():
    queue = Queue.load(workload(
        [device("g", "m", 2, [(100, 1.0)])],
        [job("a", work=10.0, team="x"), job("b", work=10.0, weight=2.0, team="x"), job("c", work=20.0, team="y")],
        objective="max_min_speedup",
    ))
    # x_a = 0.5, x_b = 0 (the floor 0.01 counts), x_c = 0.25: raw (x / w)^-2 / (W w) = 0.4, 500, 0.8.
    weights = progress_weights(queue, [0, 1, 2], {0: 5.0, 1: 10.0, 2: 15.0})
    assert weights == pytest.approx({0: 0.4 / 500, 1: 1.0, 2: 0.8 / 500})
    # Teams with equal shares: X_x = (0.5 + 0) / 0.5 = 1, X_y = 0.25 / 0.5 = 0.5: y's job weighs (1/0.5)^2 / 20
    # against x's 1 / 10 per unit of speedup.
    teams = Queue.load({**queue.model_dump(mode="json"), "objective": "team_max_min"})
    weights = progress_weights(teams, [0, 1, 2], {0: 5.0, 1: 10.0, 2: 15.0})
    assert weights == pytest.approx({0: 0.5, 1: 0.5, 2: 1.0})


def test_the_verifier_recomputes_rho_and_the_fairness_by_morning():
    queue = workload(
        [device("g", "m", 2, [(100, 1.0)])],
        [job("a", work=4.0, p=1.0, team="x"), job("b", work=4.0, p=1.0, team="x"), job("c", work=1.0, team="y")],
        objective="team_max_min",
    )
    plan = night_checked(queue, hours=3)
    assert plan.summary.fairness is not None and plan.summary.max_rho is not None
    for update, message in [
        ({"fairness": plan.summary.fairness + 0.1}, "summary: fairness is"),
        ({"max_rho": plan.summary.max_rho * 1.5}, "summary: max_rho is"),
        ({"teams": (plan.summary.teams[0].model_copy(update={"worst_rho": 9.0}), *plan.summary.teams[1:])},
         "reports worst rho 9.0"),
    ]:
        tampered = plan.model_copy(update={"summary": plan.summary.model_copy(update=update)})
        assert any(message in p for p in verify_timeline(queue, tampered)), message


def test_the_fairness_bounds_are_hand_computed_and_met_on_two_equal_jobs():
    # Two p = 1 jobs of 2 h on 2 devices, a 1 h night: 2 device-hours by morning do 2 of the 4 h of work, so no
    # timeline does more than half of each job (fairness bound 0.5). The makespan is at least 4 / 2 = 2 h and
    # T^equal = 2 h (one device each), so the last job's rho is at least 1; both are met by running the jobs side
    # by side. The gaps are the plan's distance to them.
    queue = workload(
        [device("g", "m", 2, [(100, 1.0)])],
        [job("a", work=2.0, p=1.0), job("b", work=2.0, p=1.0)],
        objective="max_min_speedup",
    )
    bound = night_bound(Queue.load(queue), hours=1.0, mip=False)
    assert bound.fairness_bound == pytest.approx(0.5, abs=1e-5)
    assert bound.max_rho_bound == pytest.approx(1.0, abs=1e-5)
    plan = night_checked(queue, hours=1)
    s = plan.summary
    assert s.bound is not None and s.fairness is not None and s.max_rho is not None
    assert s.bound.fairness_gap == pytest.approx((0.5 - s.fairness) / 0.5, abs=1e-5)
    assert s.bound.max_rho_gap == pytest.approx((s.max_rho - 1.0) / s.max_rho, abs=1e-5)
    # Both bounds are reached: the jobs run side by side (one on both devices leaves the other at 0 by morning).
    assert s.fairness == pytest.approx(0.5, abs=1e-6) and s.bound.fairness_gap == pytest.approx(0.0, abs=1e-5)
    assert s.max_rho == pytest.approx(1.0, abs=1e-6)
    # Under weighted_speedup no fairness bound; rho's stays (every summary reports max_rho).
    plain = night_bound(Queue.load({**queue, "objective": "weighted_speedup"}), hours=1.0, mip=False)
    assert plain.fairness_bound is None and plain.max_rho_bound == pytest.approx(1.0, abs=1e-5)


def test_a_team_bound_counts_the_teams_summed_progress_over_its_share():
    # Team x: two 1 h jobs; team y: one 4 h job (share 1/2 each), one device, a 2 h night, p = 1. Per hour of
    # device x's progress grows by 1 (a 1 h job), y's by 1/4: x_sum = h_x, y = h_y / 4, h_x + h_y <= 2, so
    # max min(2 h_x, 2 h_y / 4) = 2 h_x with h_x = h_y / 4: h_x = 0.4, bound 0.8.
    queue = _team_queue(devices=1, x_work=1.0, y_work=4.0)
    bound = night_bound(Queue.load(queue), hours=2.0, mip=False)
    assert bound.fairness_bound == pytest.approx(0.8, abs=1e-5)
    plan = night_checked(queue, hours=2)
    assert plan.summary.fairness is not None and plan.summary.fairness <= bound.fairness_bound


def test_the_rho_bound_follows_dependency_chains():
    # b after a, both 2 h of work on one device at most (S* = 1), 4 devices: b cannot finish before 4 h. With
    # n = 2 the equal share is 2 devices, of which one is usable: T^equal = 2 h, so rho_b >= 4 / 2 = 2 (capacity
    # alone says 1), and the plan that runs a then b meets it.
    queue = workload(
        [device("g", "m", 4, [(100, 1.0)])],
        [job("a", work=2.0, p=1.0, max_devices=1), job("b", work=2.0, p=1.0, max_devices=1, after=["a"])],
    )
    plan = night_checked(queue, hours=8)
    assert plan.summary.bound is not None
    assert plan.summary.bound.max_rho_bound == pytest.approx(2.0, abs=1e-5)
    assert plan.summary.max_rho == pytest.approx(2.0)
    assert plan.summary.bound.max_rho_gap == pytest.approx(0.0, abs=1e-5)


def _best_static_fairness(
    devices: int, jobs: list[tuple[float, float]], hours: float, teams: list[str] | None
) -> float:
    """Exhaustive search over static allocations (k_j identical devices of speed 1 for the whole night, sum k_j <=
    devices): the largest fairness by morning, x_j = min(1, S(k_j) hours / work_j), S(k) = 1 / ((1 - p) + p / k)."""
    best = 0.0
    for ks in itertools.product(range(devices + 1), repeat=len(jobs)):
        if sum(ks) > devices:
            continue
        x = [min(1.0, (1.0 / ((1 - p) + p / k) if k else 0.0) * hours / w) for k, (w, p) in zip(ks, jobs, strict=True)]
        if teams:
            names = sorted(set(teams))
            value = min(sum(xi for xi, t in zip(x, teams, strict=True) if t == n) * len(names) for n in names)
        else:
            value = min(x)
        best = max(best, value)
    return best


@pytest.mark.slow
@settings(max_examples=20)
@given(
    devices=st.integers(2, 4),
    jobs=st.lists(st.tuples(st.sampled_from([0.5, 1.0, 2.0, 4.0]), st.sampled_from([1.0, 0.9, 0.5])),
                  min_size=2, max_size=3),
    hours=st.sampled_from([0.5, 1.0, 2.0]),
    teams=st.one_of(st.none(), st.lists(st.sampled_from("xy"), min_size=3, max_size=3)),
)
def test_the_night_is_at_least_as_fair_as_the_best_static_split(devices, jobs, hours, teams):
    """On identical devices with every job released at once (no restart cost), no fixed split of the devices over
    the night does more for the fairness by morning than the planner's timeline (found by exhaustive search)."""
    teams = teams[: len(jobs)] if teams else None
    queue = workload(
        [device("g", "m", devices, [(100, 1.0)])],
        [job(f"j{i}", work=w, p=p, **({"team": teams[i]} if teams else {})) for i, (w, p) in enumerate(jobs)],
        objective="team_max_min" if teams else "max_min_speedup",
    )
    plan = night_checked(queue, hours=hours, restart_hours=0.0, bound_time_limit_s=0)
    assert plan.summary.fairness is not None
    assert plan.summary.fairness >= _best_static_fairness(devices, jobs, hours, teams) - 1e-6, plan.chosen
