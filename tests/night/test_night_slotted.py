"""The slotted non-preemptive MILP (optsched.night.slotted): its optimum against exhaustive search over the same
starts on tiny queues, its schedules checked row by row from their starts alone on random queues, and its
timelines (the `milp-slotted` candidate) through the timeline verifier."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings

from optsched.night import plan_night
from optsched.night.engine import simulate
from optsched.night.fleet import Fleet
from optsched.night.planner import SLOTTED_NAME, SLOTTED_RESERVED_NAME
from optsched.night.slotted import SlottedPolicy, Start, build, slotted_edges, solve_slotted
from optsched.schema.errors import InvalidWorkload
from optsched.schema.night import NightQueue
from optsched.solve.highs import Outcome
from optsched.verify.timeline import verify_timeline
from tests.night.conftest import START, night_checked
from tests.night.night_factories import night_queues
from tests.support.factories import device, job, workload


def schedule_problems(queue: NightQueue, starts: tuple[Start, ...], edges: list[float]) -> list[str]:
    """Every rule a slotted schedule must keep, recomputed from its starts and the queue (not from the model's
    rows): one start per job, ends = start + work / Amdahl speedup, releases, chains, hard deadlines (when the
    schedule could keep them), devices and budgets at every slot's midpoint."""
    fleet = Fleet(queue)
    out: list[str] = []
    by_job = {s.job: s for s in starts}
    if sorted(by_job) != list(range(len(queue.jobs))) or len(starts) != len(queue.jobs):
        return [f"jobs started: {sorted(s.job for s in starts)}"]
    for j, night_job in enumerate(queue.jobs):
        s = by_job[j]
        group = queue.devices[s.group]
        p = night_job.parallel_fraction
        speed = fleet.speed(j, s.group, s.level)
        run = night_job.work_hours / (1.0 / ((1 - p) / speed + p / (s.count * speed)))
        if not math.isclose(s.end - s.start, run, rel_tol=1e-9):
            out.append(f"{night_job.id}: runs {s.end - s.start} h, its work takes {run} h")
        if s.start < night_job.release_hours - 1e-9 or s.start not in edges:
            out.append(f"{night_job.id}: starts at {s.start}")
        if not (night_job.min_devices <= s.count <= fleet.max_devices(j) and s.count <= group.count):
            out.append(f"{night_job.id}: {s.count} devices")
        for i in fleet.predecessors[j]:
            if s.start < by_job[i].end - 1e-9:
                out.append(f"{night_job.id} starts before {queue.jobs[i].id} ends")
    for t in range(len(edges) - 1):
        mid = (edges[t] + edges[t + 1]) / 2
        held = [s for s in starts if s.start <= mid < s.end]
        for g, group in enumerate(queue.devices):
            if sum(s.count for s in held if s.group == g) > group.count:
                out.append(f"slot {t}: group {group.id} over its count")
        draw = fleet.idle_w + sum(
            s.count * (queue.devices[s.group].power_levels[s.level].cap_w - queue.devices[s.group].idle_w)
            for s in held
        )
        budget = queue.power.budget_at(mid)
        if budget is not None and draw > budget + 1e-6:
            out.append(f"slot {t}: {draw} W over the budget {budget} W")
    return out


def exhaustive(queue: NightQueue, horizon: float) -> float:
    """Least weighted mean completion over every combination of the model's starts that keeps `schedule_problems`
    (the same starts the MILP chooses from, checked by the function above, not by the model's rows)."""
    fleet = Fleet(queue)
    edges = slotted_edges(queue, horizon)
    model = build(queue, fleet, edges, soft_miss_hours=0.0)
    per_job = [[s for s in model.starts if s.job == j] for j in range(len(queue.jobs))]
    total = sum(job.objective_weight for job in queue.jobs)
    best = math.inf
    for combo in itertools.product(*per_job):
        value = sum(queue.jobs[s.job].objective_weight * s.end for s in combo) / total
        if value < best and not schedule_problems(queue, combo, edges):
            best = value
    return best


TINY = [
    # Two devices, three jobs: run two side by side on one device each, or one at a time on both.
    workload(
        [device("g", "m", 2, [(100, 1.0), (60, 0.7)], idle_w=10)],
        [
            job("A", work=1.0, p=0.9, max_devices=2, weight=2.0),
            job("B", work=0.5, p=0.5, max_devices=2),
            job("C", work=0.75, p=1.0, max_devices=2, release_hours=0.25),
        ],
        power={"budget_w": 170},
    ),
    # Two device types, a chain and a hard deadline.
    workload(
        [device("fast", "a", 1, [(200, 2.0)], idle_w=20), device("slow", "b", 2, [(100, 1.0)], idle_w=10)],
        [
            job("A", work=1.0, p=0.8, max_devices=2),
            job("B", work=0.5, p=1.0, after=["A"]),
            job("C", work=1.0, p=0.6, max_devices=2, deadline_hours=1.5, priority="critical"),
        ],
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize("queue", TINY)
def test_the_slotted_optimum_is_the_exhaustive_one(queue):
    q = NightQueue.load(queue)
    horizon = 3.0
    optimum = exhaustive(q, horizon)
    result = solve_slotted(q, horizon_hours=horizon, time_limit_s=60, mip_gap=1e-9, soft_miss_hours=0.0)
    assert result.outcome is Outcome.optimal
    assert result.weighted_completion_hours == pytest.approx(optimum, rel=1e-6)
    assert result.bound == pytest.approx(optimum, rel=1e-6)
    assert schedule_problems(q, result.starts, slotted_edges(q, horizon)) == []


@pytest.mark.slow
@settings(max_examples=15, deadline=None)
@given(night_queues(max_jobs=8))
def test_slotted_schedules_keep_every_rule_and_their_timelines_verify(queue):
    q = NightQueue.load(queue)
    result = solve_slotted(q, horizon_hours=8.0, time_limit_s=5)
    if not result.starts:
        assert result.reason  # said why (no start ends by the horizon, a job that cannot run)
        return
    assert schedule_problems(q, result.starts, slotted_edges(q, 8.0)) == [] or any(
        q.jobs[s.job].is_hard for s in result.starts
    )
    if result.bound is not None and result.objective is not None:
        assert result.bound <= result.objective + 1e-6
    night_checked(queue, candidates=(SLOTTED_NAME,))
    night_checked(queue, candidates=(SLOTTED_RESERVED_NAME,))


def test_the_slotted_candidate_runs_its_schedule_and_is_chosen_when_best():
    queue = TINY[0]
    plan = night_checked(queue, candidates=(SLOTTED_NAME,), bound_time_limit_s=0)
    assert plan.chosen == SLOTTED_NAME
    assert not plan.summary.never_ran
    schedule = solve_slotted(NightQueue.load(queue), horizon_hours=8.0 * 1.2, soft_miss_hours=0.0)
    # The engine starts each job as soon as its devices are free, no later than its slot: never worse.
    assert plan.summary.weighted_mean_completion_hours <= schedule.weighted_completion_hours + 1e-9
    every = night_checked(queue, bound_time_limit_s=0)
    assert every.summary.weighted_mean_completion_hours <= plan.summary.weighted_mean_completion_hours + 1e-9


def test_a_schedule_that_does_not_fit_the_horizon_says_so():
    queue = NightQueue.load(workload([device("g", "m", 1, [(100, 1.0)])], [job("A", work=5.0, p=1.0)]))
    result = solve_slotted(queue, horizon_hours=2.0)
    assert result.outcome is Outcome.infeasible and not result.starts
    assert "ends by the horizon" in result.reason
    too_big = solve_slotted(queue, horizon_hours=8.0, max_columns=3)
    assert "over the limit of 3" in too_big.reason


def test_unknown_candidates_are_refused_with_the_slotted_one_listed():
    with pytest.raises(InvalidWorkload) as err:
        plan_night(TINY[0], start=START, hours=8, candidates=("milp-slotty",))
    assert err.value.errors[0].path == "candidates"
    assert SLOTTED_NAME in err.value.errors[0].message


# Drawn by tests/night/test_night_properties.py: the critical j3 is released at 1 h and needs one device until its
# deadline at 4 h; j0 needs both devices, at the lower cap (two at the top cap draw over the budget), for 3.75 h.
# Every candidate that starts j0 at once makes j3 miss; the list schedulers never run j0 at all.
CRITICAL_LATER = workload(
    [device("g0", "fast", 2, [(100.0, 1.0), (50.0, 0.6)], idle_w=10.0, domain="r0", memory_gb=40.0)],
    [
        job("j0", work=3.0, p=0.5, priority="low", max_devices=2, min_devices=2, speed_on={"slow": 1.5}),
        job("j1", work=1.0, p=0.0, priority="normal", release_hours=1.0, after=["j0"]),
        job("j2", work=3.0, p=0.5, priority="low", release_hours=1.0, deadline_hours=4.0, after=["j1"],
            max_devices=2, speed_on={"slow": 1.5}),
        job("j3", work=3.0, p=0.5, priority="critical", release_hours=1.0, deadline_hours=4.0, max_devices=2),
    ],
    power={"budget_w": 164},
    options={"time_limit_s": 20, "mip_gap": 1e-6},
)


def test_a_way_over_every_budget_leaves_a_hard_deadline_to_the_ways_that_fit():
    q = NightQueue.load(CRITICAL_LATER)
    edges = slotted_edges(q, 18.33)
    # A release between slot edges: j3's first start at the next edge would end after its deadline.
    assert 1.0 in edges
    model = build(q, Fleet(q), edges)
    assert all(s.count * q.devices[s.group].power_levels[s.level].cap_w <= 164 - 20 for s in model.starts)
    # Two devices at the top cap were j3's only way to end by 4 h from the edge after its release; kept alone,
    # they left no schedule at all.
    result = solve_slotted(q, horizon_hours=18.33, time_limit_s=10)
    assert result.starts and schedule_problems(q, result.starts, edges) == []


def test_reserving_keeps_a_later_jobs_slot_from_the_jobs_after_it():
    q = NightQueue.load(CRITICAL_LATER)
    schedule = solve_slotted(q, horizon_hours=16.0, time_limit_s=10)
    first = min(schedule.starts, key=lambda s: s.start)
    assert q.jobs[first.job].id == "j3" and first.start == 1.0
    plain = simulate(q, SlottedPolicy(schedule), start=START, hours=8.0)
    held = simulate(q, SlottedPolicy(schedule, reserve=True), start=START, hours=8.0)
    for plan in (plain, held):
        assert verify_timeline(q, plan) == []
    # Without the reservation j0 starts at once (j3 is not released yet) and holds both devices past j3's deadline.
    assert plain.summary.hard_deadlines_missed == ("j3",)
    assert not held.summary.hard_deadlines_missed and not held.summary.never_ran
    by_id = {t.job: t for t in held.jobs}
    assert by_id["j0"].start_hours >= by_id["j3"].finish_hours - 1e-9


def test_the_planner_waits_for_the_critical_job_and_runs_every_job():
    plan = night_checked(CRITICAL_LATER, bound_time_limit_s=0)
    assert not plan.summary.hard_deadlines_missed and not plan.summary.never_ran
    assert plan.chosen == SLOTTED_RESERVED_NAME
