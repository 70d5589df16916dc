"""Bounds for the night's fairness figures (docs/guides/fairness.md): an upper bound on the fairness by morning
and a lower bound on the largest finish-time rho, each from one small LP over device-hours.

Both relax the night the same way: job j on group g does at most s_jg units of work per device-hour (its fastest
level there; S <= R under Amdahl's law, so a device-hour never does more work than its speed), group g offers
count_g device-hours per hour, and job j's work is done at most at rate S*_j (its best speedup alone on the
fleet, optsched.night.fleet). Everything else (budgets, max_devices beyond S*_j, min_devices, chains, restarts,
failures, integrality) is left out: each only takes away from what a timeline can do.

* Fairness by morning (the summary's `fairness`): max z s.t. z x target_m <= sum_{j in m} x_j for every member
  m (a job with target weight_j under max_min_speedup, a team with target share under team_max_min), x_j <=
  min(1, (hours - release_j) S*_j / W_j), W_j x_j <= sum_g s_jg y_jg, sum_j y_jg <= count_g x hours. Any
  timeline's time-averaged device-hours and progress by morning satisfy every row, so its fairness is at most z*.
* Largest rho over finished jobs (the summary's `max_rho`), when every job finishes: the makespan C is at least
  C* = min C s.t. W_j <= sum_g s_jg y_jg, sum_j y_jg <= count_g (C - r0), C >= F_j (r0 the
  earliest release); the job finishing last has rho >= (C* - release_j) / T_j^equal for some j, and every job
  has rho_j >= (F_j - release_j) / T_j^equal, F_j its earliest finish: after its release and its predecessors'
  earliest finishes (`after`), at S*_j. So max rho >= max(max_j (F_j - release_j) / T_j^equal,
  min_j (C* - release_j) / T_j^equal), with C* >= max_j F_j.
"""

from __future__ import annotations

import math
import time

import highspy
import numpy as np

from optsched.night.fairness import equal_share_speedup
from optsched.night.fleet import Fleet
from optsched.schema.night import NightQueue
from optsched.schema.workload import FAIR_OBJECTIVES
from optsched.solve.highs import Outcome, new_highs, run_highs

# HiGHS's optimum is exact to its feasibility tolerances: upper bounds are raised, lower bounds lowered, by this.
SAFETY = 1e-6
# Wall time each LP may take at most (they have jobs x groups columns: milliseconds on the bench queues).
FAIR_BOUND_TIME_LIMIT_S = 2.0


def _device_hour_speeds(queue: NightQueue, fleet: Fleet) -> dict[tuple[int, int], float]:
    """s_jg: job j's work per device-hour on group g at its fastest level there (reference-work hours)."""
    return {
        (j, g): fleet.speed(j, g, fleet.fastest_level(j, g))
        for j in range(len(queue.jobs))
        for g in fleet.eligible_groups[j]
    }


def _solve_lp(
    cost: list[float], lower: list[float], upper: list[float],
    rows: list[tuple[list[tuple[int, float]], float, float]], time_limit_s: float,
) -> float | None:
    """min cost . v over the rows (terms, lower, upper); None unless HiGHS proves the optimum in time."""
    h = new_highs()
    h.addVars(len(cost), np.array(lower), np.array(upper))
    h.changeColsCost(len(cost), np.arange(len(cost), dtype=np.int32), np.array(cost))
    starts: list[int] = []
    index: list[int] = []
    value: list[float] = []
    for terms, _, _ in rows:
        starts.append(len(index))
        index.extend(c for c, _ in terms)
        value.extend(v for _, v in terms)
    h.addRows(
        len(rows), np.array([lo for _, lo, _ in rows]), np.array([up for _, _, up in rows]), len(index),
        np.array(starts, dtype=np.int32), np.array(index, dtype=np.int32), np.array(value),
    )
    h.changeObjectiveSense(highspy.ObjSense.kMinimize)
    result = run_highs(h, wall_deadline=time.monotonic() + time_limit_s, mip_gap=0.0, relax=True,
                       integer_columns=np.zeros(0, dtype=np.int32))
    return result.incumbent if result.outcome is Outcome.optimal else None


def fairness_upper_bound(
    queue: NightQueue, fleet: Fleet, hours: float, time_limit_s: float = FAIR_BOUND_TIME_LIMIT_S
) -> float | None:
    """An upper bound on the fairness by morning of any timeline of `queue` (module docstring; None when the
    queue's objective is not a fairness one or the LP did not end)."""
    if queue.objective not in FAIR_OBJECTIVES or not queue.jobs:
        return None
    speeds = _device_hour_speeds(queue, fleet)
    cost, lower, upper = [-1.0], [0.0], [math.inf]  # column 0: z
    x = {}
    for j, job in enumerate(queue.jobs):
        reach = max(0.0, hours - job.release_hours) * fleet.best_speedup(j) / job.work_hours
        x[j] = _column(cost, lower, upper, min(1.0, reach))
    y = {key: _column(cost, lower, upper, math.inf) for key in speeds}
    rows: list[tuple[list[tuple[int, float]], float, float]] = []
    if queue.objective == "team_max_min":
        for team, share in queue.team_shares().items():
            members = [(x[j], -1.0) for j, job in enumerate(queue.jobs) if job.team_name == team]
            rows.append(([(0, share), *members], -math.inf, 0.0))
    else:
        rows.extend(([(0, job.weight), (x[j], -1.0)], -math.inf, 0.0) for j, job in enumerate(queue.jobs))
    for j, job in enumerate(queue.jobs):
        rows.append(([(x[j], -job.work_hours), *[(y[j, g], speeds[j, g]) for g in fleet.eligible_groups[j]]],
                     0.0, math.inf))
    for g, group in enumerate(queue.devices):
        users = [(y[j, g], 1.0) for j in range(len(queue.jobs)) if (j, g) in y]
        if users:
            rows.append((users, -math.inf, group.count * hours))
    value = _solve_lp(cost, lower, upper, rows, time_limit_s)
    return None if value is None else -value * (1 + SAFETY) + SAFETY


def earliest_finishes(queue: NightQueue, fleet: Fleet) -> list[float]:
    """Per job the earliest it can finish (hours): its release or its predecessors' earliest finishes, whichever
    is later, plus its work at its best speedup (`after`: no progress before every predecessor is done)."""
    preds = fleet.predecessors
    waiting = [len(p) for p in preds]
    successors: list[list[int]] = [[] for _ in queue.jobs]
    for j, ps in enumerate(preds):
        for i in ps:
            successors[i].append(j)
    ready = [j for j, n in enumerate(waiting) if n == 0]
    start = [job.release_hours for job in queue.jobs]
    finish = [0.0] * len(queue.jobs)
    while ready:  # Kahn's order: a job's start is final once every predecessor is
        j = ready.pop()
        finish[j] = start[j] + queue.jobs[j].work_hours / fleet.best_speedup(j)
        for k in successors[j]:
            start[k] = max(start[k], finish[j])
            waiting[k] -= 1
            if waiting[k] == 0:
                ready.append(k)
    return finish


def _column(cost: list[float], lower: list[float], upper: list[float], top: float) -> int:
    """A new column in [0, top] without cost; its index."""
    cost.append(0.0)
    lower.append(0.0)
    upper.append(top)
    return len(cost) - 1


def max_rho_lower_bound(
    queue: NightQueue, fleet: Fleet, time_limit_s: float = FAIR_BOUND_TIME_LIMIT_S
) -> float | None:
    """A lower bound on the largest rho of any timeline of `queue` that finishes every job (module docstring;
    None when some job has no equal share or the LP did not end)."""
    equal = [equal_share_speedup(queue, job) for job in queue.jobs]
    if not queue.jobs or any(s <= 0 for s in equal):
        return None
    speeds = _device_hour_speeds(queue, fleet)
    finish = earliest_finishes(queue, fleet)
    alone = max((finish[j] - job.release_hours) * equal[j] / job.work_hours for j, job in enumerate(queue.jobs))
    earliest = min(job.release_hours for job in queue.jobs)
    least = max(finish)
    cost, lower, upper = [1.0], [least], [math.inf]  # column 0: C
    y = {key: _column(cost, lower, upper, math.inf) for key in speeds}
    rows: list[tuple[list[tuple[int, float]], float, float]] = [
        ([(y[j, g], speeds[j, g]) for g in fleet.eligible_groups[j]], job.work_hours, math.inf)
        for j, job in enumerate(queue.jobs)
    ]
    for g, group in enumerate(queue.devices):
        users = [(y[j, g], 1.0) for j in range(len(queue.jobs)) if (j, g) in y]
        if users:
            rows.append(([*users, (0, -float(group.count))], -math.inf, -group.count * earliest))
    makespan = _solve_lp(cost, lower, upper, rows, time_limit_s)
    if makespan is None:
        return alone * (1 - SAFETY)
    last = min((makespan - job.release_hours) * equal[j] / job.work_hours for j, job in enumerate(queue.jobs))
    return max(alone, last) * (1 - SAFETY)
