"""The time-indexed relaxation of the night: lower bounds on weighted mean completion and on energy, and, for
small queues, the optimum of its MILP.

The night is cut into slots [a_t, a_t+1) of `slot_hours` (5-15 min; window edges are slot edges too) up to a
horizon H, and one *tail* slot [H, inf) without capacity or budgets. For job j (weight w_j = priority weight x
weight, work W_j, parallel fraction p_j) and slot t the model has

* n[j,g,l,t]: the time-average number of devices of group g at power level l the job holds in the slot;
* R[j,t] = sum n x speed (level speed x speed_on): the time-average aggregate speed;
* x[j,t]: the share of the job's work done in the slot (sum over t = 1);
* u[j,t] in {0, 1}: the job is not finished when the slot starts (C_j > a_t); C_j its completion, hours.

and minimises sum_j w_j C_j / sum_j w_j. Why this is a lower bound on every timeline that finishes every job
(the verifier's rules: optsched.verify.timeline): take any such timeline and set n, R, x to its time averages
over each slot, u[j,t] = [C_j > a_t]. Then every row holds:

* capacity, max_devices and budgets are linear in the device counts, so their time averages obey them (the
  budget taken at its largest in the slot; window edges are slot edges, so it is the budget in force);
* progress: at each instant the Amdahl speedup S = 1 / ((1-p)/s_host + p/R) is at most R (s_host <= R) and at
  most S(R; s*_j), with s*_j the job's fastest device at its fastest level (S grows with s_host). Both are
  concave in R, so by Jensen the work done in a slot, W_j x[j,t] = integral of S, is at most len_t x f(mean R)
  for f = min(R, tangent planes of S(R; s*_j)); and at most len_t x S*_j (its best speedup, rate r_j = S*_j / W_j);
* completion: no progress after C_j (x[j,t] <= u[j,t], u falling); in C_j's slot the work done there took at
  least x / r_j hours after a_t, so C_j >= a_t u[j,t] + x[j,t] / r_j - a_t+1 u[j,t+1]; the mean busy time is at
  least sum_t a_t x[j,t] and at most C_j - 1 / (2 r_j) (progress at rate <= r_j); C_j >= release + 1 / r_j;
* `after` i -> j: j makes no progress in a slot unless i is finished by its end (x[j,t] <= 1 - u[i,t+1]),
  and C_j >= C_i + 1 / r_j;
* time windows: no progress before e_j = max(release_j, max over i before j of e_i + 1 / r_i) (no predecessor
  can end sooner), so x[j,t] <= r_j x hours of the slot after e_j and u[j,t] = 1 for a_t < e_j + 1 / r_j.

What it relaxes: device indices and min_devices (counts are averages), restarts (free, at any instant), device
failures (devices never fail), the host speed (always the job's fastest), deadlines (a timeline may miss them;
weighted completion does not count them), and in the tail slot every capacity. Discretisation cannot push the
bound above the true optimum: no row uses where inside a slot something happens except through the bounds
above, which hold for any placement within the slot. The LP relaxation (u continuous) is a bound; the MILP's
dual bound is a stronger one, and its optimum (the *time-indexed optimum*) is itself at most the true optimum:
a plan's ratio to it overstates the plan's distance to the best night.

Energy: energy_kwh = integral over the horizon (the night, or the makespan when longer) of the fleet's draw, busy
devices at their cap and the rest idle (down ones too); no row ties energy to time (a timeline may run late and
miss deadlines), so the relaxation's least energy is closed-form: idle draw of the fleet until the night's end or
the latest earliest finish F_j (release, predecessors, fastest run: no timeline ends sooner), whichever is later,
plus for each job W_j x the least (cap - idle_w) / speed over its eligible groups and levels (S <= R: a unit of
work needs at least one device-hour of unit speed).
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field

import highspy
import numpy as np

from optsched.model.amdahl import speedup
from optsched.night.fair_bound import fairness_upper_bound, max_rho_lower_bound
from optsched.night.fleet import Fleet
from optsched.schema.night import BoundStatus, NightBound, NightQueue, NightSummary
from optsched.solve.highs import Outcome, new_highs, run_highs

logger = logging.getLogger(__name__)

# Hours per slot (15 min); longer nights get longer slots so that at most BOUND_MAX_SLOTS cover the horizon.
BOUND_SLOT_HOURS = 0.25
BOUND_MAX_SLOT_HOURS = 0.5
BOUND_MAX_SLOTS = 64
# Placement columns (jobs x eligible hull levels x slots) above which the slots are made longer: the LP of a
# 55-job bench queue (20,000 columns) took 3 s on 2 cores at load 8; a 120-job one (45,000) had not ended after
# 60 s; medium-108's night of 8.41 h (38,961) found no solution in its 10 s, while wide-0's (32,640) was solved.
BOUND_MAX_COLUMNS = 35_000
# Longer slots keep the model within BOUND_COARSE_COLUMNS (the 120-job bench nights: LP in 0.7-1.0 s at 10,000
# columns, 2.7-3.2 s at 20,000, their bounds 3-6 % higher), with at least BOUND_MIN_SLOTS (500-job nights: 4-6).
BOUND_COARSE_COLUMNS = 12_000
BOUND_MIN_SLOTS = 3
BOUND_TIME_LIMIT_S = 10.0
BOUND_MIP_GAP = 1e-3
# Tangent planes of each job's Amdahl curve S(R; s*) in the progress rows.
TANGENTS = 4
# HiGHS's optimum is exact to its feasibility tolerances; the bounds reported are lowered by this share.
SAFETY = 1e-6
# Each fairness LP (optsched.night.fair_bound) may take at most this share of the bound's time limit.
FAIR_BOUND_SHARE = 0.1


@dataclass
class Matrix:
    """Columns and rows of the model as plain arrays (handed to HiGHS in one call each)."""

    lower: list[float] = field(default_factory=list)
    upper: list[float] = field(default_factory=list)
    cost: list[float] = field(default_factory=list)
    integer: list[int] = field(default_factory=list)
    row_lower: list[float] = field(default_factory=list)
    row_upper: list[float] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)
    index: list[int] = field(default_factory=list)
    value: list[float] = field(default_factory=list)

    def column(self, lower: float, upper: float, cost: float = 0.0, integer: bool = False) -> int:
        self.lower.append(lower)
        self.upper.append(upper)
        self.cost.append(cost)
        if integer:
            self.integer.append(len(self.lower) - 1)
        return len(self.lower) - 1

    def row(self, terms: list[tuple[int, float]], lower: float = -math.inf, upper: float = math.inf) -> None:
        self.starts.append(len(self.index))
        for col, val in terms:
            self.index.append(col)
            self.value.append(val)
        self.row_lower.append(lower)
        self.row_upper.append(upper)

    def to_highs(self) -> tuple[highspy.Highs, np.ndarray]:
        """A HiGHS object holding the model (minimise), and its integer columns."""
        h = new_highs()
        h.addVars(len(self.lower), np.array(self.lower), np.array(self.upper))
        h.changeColsCost(len(self.cost), np.arange(len(self.cost), dtype=np.int32), np.array(self.cost))
        h.addRows(
            len(self.row_lower),
            np.array(self.row_lower),
            np.array(self.row_upper),
            len(self.index),
            np.array(self.starts, dtype=np.int32),
            np.array(self.index, dtype=np.int32),
            np.array(self.value),
        )
        integer = np.array(self.integer, dtype=np.int32)
        h.changeColsIntegrality(len(integer), integer, np.ones(len(integer), dtype=np.uint8))
        return h, integer


@dataclass
class TimeIndexed:
    """The model's index sets and columns (built by `build`, one function per constraint family)."""

    queue: NightQueue
    fleet: Fleet
    edges: list[float]  # a_0 = 0 < a_1 < ... < a_T = H; slot T is the tail [H, inf)
    m: Matrix = field(default_factory=Matrix)
    n: dict[tuple[int, int, int, int], int] = field(default_factory=dict)
    speed: dict[tuple[int, int], int] = field(default_factory=dict)
    x: dict[tuple[int, int], int] = field(default_factory=dict)
    u: dict[tuple[int, int], int] = field(default_factory=dict)
    c: dict[int, int] = field(default_factory=dict)
    levels: tuple[tuple[int, ...], ...] = ()  # per group: its hull levels (hull_levels)

    @property
    def slots(self) -> int:
        """Regular slots T (the tail slot has index T)."""
        return len(self.edges) - 1

    @property
    def horizon(self) -> float:
        return self.edges[-1]

    def length(self, t: int) -> float:
        return self.edges[t + 1] - self.edges[t]

    def rate(self, j: int) -> float:
        """r_j: the largest share of job j's work done per hour (its best speedup / its work)."""
        return self.fleet.best_speedup(j) / self.queue.jobs[j].work_hours


def hull_levels(queue: NightQueue, g: int) -> tuple[int, ...]:
    """Levels of group g on the upper concave hull of (0, 0) and each level's (cap - idle_w, speed): any other
    level is matched by a mix of these on at most as many devices, at no more power and no less speed (speed_on
    scales a group's speeds alike), so the relaxation keeps its optimum with these alone."""
    group = queue.devices[g]
    points = sorted(
        ((lv.cap_w - group.idle_w, lv.speed, k) for k, lv in enumerate(group.power_levels)), key=lambda x: (x[0], -x[1])
    )
    hull: list[tuple[float, float, int]] = [(0.0, 0.0, -1)]
    for point in points:
        if point[1] <= hull[-1][1]:
            continue  # no faster than a cheaper level
        while len(hull) >= 2:
            (x0, y0, _), (x1, y1, _) = hull[-2], hull[-1]
            if (x1 - x0) * (point[1] - y0) - (y1 - y0) * (point[0] - x0) >= 0:
                hull.pop()  # hull[-1] lies on or below the chord from hull[-2] to this point
            else:
                break
        hull.append(point)
    return tuple(sorted(k for _, _, k in hull if k >= 0))


def slot_edges(queue: NightQueue, horizon: float, slot_hours: float) -> list[float]:
    """Uniform edges every slot_hours up to the horizon, with every window edge inside it added."""
    steps = max(1, math.ceil(horizon / slot_hours - 1e-9))
    edges = {round(k * slot_hours, 9) for k in range(steps + 1)}
    for w in queue.power.windows:
        edges.update(x for x in (w.from_hours, w.to_hours) if 0 < x < steps * slot_hours)
    return sorted(edges)


def grid(
    queue: NightQueue, fleet: Fleet, hours: float, horizon: float, slot_hours: float, max_columns: int
) -> list[float]:
    """Slot edges up to the horizon: slots of `slot_hours`, longer where BOUND_MAX_SLOTS would not cover it (at
    most BOUND_MAX_SLOT_HOURS). Where that is over `max_columns` placement columns, equal slots over the night's
    `hours` alone, as many as keep the model within BOUND_COARSE_COLUMNS: any edges give a valid bound, and at
    equal columns shorter slots gave more than a longer horizon (hardheavy-1 of bench/night_queues_other.py, 9
    equal slots: 2.34 h over its 8-h night, 2.19 h over its 34.6-h makespan)."""
    slot = min(max(slot_hours, horizon / BOUND_MAX_SLOTS), max(slot_hours, BOUND_MAX_SLOT_HOURS))
    edges = slot_edges(queue, horizon, slot)
    per_slot = max(1, placement_columns(queue, fleet, 1))  # every job's hull levels, counted once
    if per_slot * (len(edges) - 1) <= max_columns:
        return edges
    horizon = min(horizon, hours)
    windows = len(slot_edges(queue, horizon, horizon)) - 2  # window edges inside the horizon: a slot each
    slots = max(BOUND_MIN_SLOTS, min(max_columns, BOUND_COARSE_COLUMNS) // per_slot - windows)
    return slot_edges(queue, horizon, horizon / slots)


def placement_columns(queue: NightQueue, fleet: Fleet, slots: int) -> int:
    """n[j,g,l,t] columns the model would have: jobs x eligible levels x slots."""
    levels = sum(len(hull_levels(queue, g)) for j in range(len(queue.jobs)) for g in fleet.eligible_groups[j])
    return levels * slots


def build(queue: NightQueue, fleet: Fleet, edges: list[float]) -> TimeIndexed:
    """The time-indexed model: a flat list of its constraint families."""
    model = TimeIndexed(queue, fleet, edges, levels=tuple(hull_levels(queue, g) for g in range(len(queue.devices))))
    add_columns(model)
    add_device_capacity(model)
    add_power_budgets(model)
    add_max_devices(model)
    add_progress(model)
    add_work(model)
    add_activity(model)
    add_completion(model)
    add_mean_busy_time(model)
    add_chains(model)
    add_rate_activity(model)
    add_unfinished_work(model)
    add_remaining_time(model)
    return model


def earliest_starts(model: TimeIndexed) -> list[float]:
    """e_j = max(release_j, max over i before j of e_i + 1 / r_i): no timeline progresses job j before (hours)."""
    before, finishes = model.fleet.predecessors, model.fleet.earliest_finishes
    return [max([job.release_hours, *(finishes[i] for i in before[j])]) for j, job in enumerate(model.queue.jobs)]


def add_columns(model: TimeIndexed) -> None:
    """n, R, x (start and rate bounds: x[j,t] <= r_j x hours of the slot after its earliest start e_j), u (fixed
    to 1 in slots starting before e_j + 1 / r_j, when it cannot be finished), C (>= e_j + 1 / r_j); the objective
    sum_j w_j C_j / sum_j w_j in hours."""
    q, m, T = model.queue, model.m, model.slots
    weights = [job.objective_weight for job in q.jobs]
    total = sum(weights)
    starts = earliest_starts(model)
    for j in range(len(q.jobs)):
        r = model.rate(j)
        most = model.fleet.max_devices(j)
        for t in range(T):
            for g in model.fleet.eligible_groups[j]:
                for level in model.levels[g]:
                    model.n[j, g, level, t] = m.column(0.0, float(min(most, q.devices[g].count)))
            model.speed[j, t] = m.column(0.0, math.inf)
        for t in range(T + 1):
            end = model.edges[t + 1] if t < T else math.inf
            room = end - max(model.edges[t], starts[j])
            model.x[j, t] = m.column(0.0, 0.0 if room <= 0 else min(1.0, r * room))
            unfinished = t == 0 or model.edges[t] < starts[j] + 1.0 / r - 1e-9
            model.u[j, t] = m.column(1.0 if unfinished else 0.0, 1.0, integer=True)
        model.c[j] = m.column(starts[j] + 1.0 / r, math.inf, cost=weights[j] / total)


def add_device_capacity(model: TimeIndexed) -> None:
    """device_capacity[g,t]: sum_{j,l} n[j,g,l,t] <= count_g (devices, time averages)."""
    q = model.queue
    for t in range(model.slots):
        for g, group in enumerate(q.devices):
            terms = [
                (model.n[j, g, level, t], 1.0)
                for j in range(len(q.jobs))
                if g in model.fleet.eligible_groups[j]
                for level in model.levels[g]
            ]
            if terms:
                model.m.row(terms, upper=float(group.count))


def add_power_budgets(model: TimeIndexed) -> None:
    """power_budget[t] and domain_budget[d,t]: idle draw + sum n x (cap - idle_w) <= budget in force (W)."""
    q, fleet = model.queue, model.fleet
    scopes: list[tuple[str | None, float | None]] = [(None, None)]
    scopes += [(d, q.power.domains.get(d)) for d in fleet.domains if d in q.power.domains]
    by_slot: dict[int, list[tuple[int, int, int]]] = {t: [] for t in range(model.slots)}
    for (_, g, level, t), col in model.n.items():
        by_slot[t].append((col, g, level))
    for t in range(model.slots):
        middle = (model.edges[t] + model.edges[t + 1]) / 2
        for domain, limit in scopes:
            budget = q.power.budget_at(middle) if domain is None else limit
            if budget is None:
                continue
            idle = fleet.idle_w if domain is None else fleet.idle_of_domain(domain)
            terms = [
                (col, q.devices[g].power_levels[level].cap_w - q.devices[g].idle_w)
                for col, g, level in by_slot[t]
                if domain is None or q.devices[g].domain == domain
            ]
            model.m.row(terms, upper=budget - idle)


def add_max_devices(model: TimeIndexed) -> None:
    """max_devices[j,t]: sum_{g,l} n[j,g,l,t] <= max_devices_j (only where it binds below the eligible count)."""
    q = model.queue
    for j, job in enumerate(q.jobs):
        eligible = sum(q.devices[g].count for g in model.fleet.eligible_groups[j])
        if job.max_devices is None or job.max_devices >= eligible:
            continue
        for t in range(model.slots):
            terms = [
                (model.n[j, g, level, t], 1.0) for g in model.fleet.eligible_groups[j] for level in model.levels[g]
            ]
            model.m.row(terms, upper=float(job.max_devices))


def tangents(p: float, s_host: float, r_max: float, count: int = TANGENTS) -> list[tuple[float, float]]:
    """(a, b) with S(R; s_host) <= a + b R for all R > 0: tangents of the concave Amdahl curve at R0 on a geometric
    grid s_host .. r_max (S' = p / (R (1-p)/s_host + p)^2 x ... in closed form below)."""
    if p >= 1.0 or r_max <= s_host:
        return []
    out = []
    for k in range(count):
        r0 = s_host * (r_max / s_host) ** (k / max(1, count - 1))
        s0 = speedup(p, s_host, r0)
        slope = p * s0 * s0 / (r0 * r0)  # dS/dR = (p / R^2) S^2
        out.append((s0 - slope * r0, slope))
    return out


def add_progress(model: TimeIndexed) -> None:
    """speed_def[j,t]: R[j,t] = sum n x speed; progress[j,t,k]: W_j x[j,t] <= len_t (a_k + b_k R[j,t]) for
    S <= R and each tangent of S(R; s*_j) (reference work-hours)."""
    q, fleet, m = model.queue, model.fleet, model.m
    for j, job in enumerate(q.jobs):
        groups = fleet.eligible_groups[j]
        s_star = max(fleet.speed(j, g, fleet.fastest_level(j, g)) for g in groups)
        r_max = sorted(
            (fleet.speed(j, g, fleet.fastest_level(j, g)) for g in groups for _ in range(q.devices[g].count)),
            reverse=True,
        )[: fleet.max_devices(j)]
        planes = [(0.0, 1.0), *tangents(job.parallel_fraction, s_star, sum(r_max))]
        for t in range(model.slots):
            terms = [(model.speed[j, t], 1.0)]
            terms += [(model.n[j, g, level, t], -fleet.speed(j, g, level)) for g in groups for level in model.levels[g]]
            m.row(terms, lower=0.0, upper=0.0)
            span = model.length(t)
            for a, b in planes:
                m.row([(model.x[j, t], job.work_hours), (model.speed[j, t], -span * b)], upper=span * a)


def add_work(model: TimeIndexed) -> None:
    """work[j]: sum_t x[j,t] = 1 (every job finishes, the tail slot included)."""
    for j in range(len(model.queue.jobs)):
        model.m.row([(model.x[j, t], 1.0) for t in range(model.slots + 1)], lower=1.0, upper=1.0)


def add_activity(model: TimeIndexed) -> None:
    """active[j,t]: u[j,t+1] <= u[j,t] and x[j,t] <= u[j,t] (no progress once finished)."""
    for j in range(len(model.queue.jobs)):
        for t in range(model.slots + 1):
            model.m.row([(model.x[j, t], 1.0), (model.u[j, t], -1.0)], upper=0.0)
            if t < model.slots:
                model.m.row([(model.u[j, t + 1], 1.0), (model.u[j, t], -1.0)], upper=0.0)


def add_rate_activity(model: TimeIndexed) -> None:
    """rate_active[j,t]: x[j,t] <= min(1, r_j len_t) u[j,t] (shares; valid: a finished job makes no progress, an
    unfinished one at most its best rate; tightens active[j,t] in the LP when a job needs more than one slot)."""
    m = model.m
    for j in range(len(model.queue.jobs)):
        r = model.rate(j)
        for t in range(model.slots):
            most = min(1.0, r * model.length(t))
            if most < 1.0 - 1e-9 and m.upper[model.x[j, t]] > 0:
                m.row([(model.x[j, t], 1.0), (model.u[j, t], -most)], upper=0.0)


def add_unfinished_work(model: TimeIndexed) -> None:
    """unfinished[j,t]: u[j,t] >= sum_{t' >= t} x[j,t'] (shares; the work left at a_t is positive only while the
    job is unfinished, and at most all of it)."""
    m = model.m
    for j in range(len(model.queue.jobs)):
        for t in range(1, model.slots + 1):
            if m.lower[model.u[j, t]] >= 1.0:
                continue  # fixed unfinished: the row holds anyway
            terms = [(model.u[j, t], 1.0)] + [(model.x[j, k], -1.0) for k in range(t, model.slots + 1)]
            m.row(terms, lower=0.0)


def add_remaining_time(model: TimeIndexed) -> None:
    """remaining_time[j,t]: C_j >= a_t u[j,t] + sum_{t' >= t} x[j,t'] / r_j (hours; unfinished at a_t, the work
    left takes at least its share / r_j; finished, nothing is left and the row reads C_j >= 0)."""
    m = model.m
    for j in range(len(model.queue.jobs)):
        inv = 1.0 / model.rate(j)
        for t in range(1, model.slots + 1):
            terms = [(model.c[j], 1.0), (model.u[j, t], -model.edges[t])]
            terms += [(model.x[j, k], -inv) for k in range(t, model.slots + 1)]
            m.row(terms, lower=0.0)


def add_completion(model: TimeIndexed) -> None:
    """completion[j,t]: C_j >= a_t u[j,t] + x[j,t] / r_j - a_t+1 u[j,t+1] (hours; the tail: C_j >= H u + x / r_j)."""
    for j in range(len(model.queue.jobs)):
        inv = 1.0 / model.rate(j)
        for t in range(model.slots + 1):
            terms = [(model.c[j], 1.0), (model.u[j, t], -model.edges[t]), (model.x[j, t], -inv)]
            if t < model.slots:
                terms.append((model.u[j, t + 1], model.edges[t + 1]))
            model.m.row(terms, lower=0.0)


def add_mean_busy_time(model: TimeIndexed) -> None:
    """mean_busy[j]: C_j - sum_t a_t x[j,t] >= 1 / (2 r_j) (hours)."""
    for j in range(len(model.queue.jobs)):
        terms = [(model.c[j], 1.0)] + [(model.x[j, t], -model.edges[t]) for t in range(1, model.slots + 1)]
        model.m.row(terms, lower=0.5 / model.rate(j))


def add_chains(model: TimeIndexed) -> None:
    """after[i,j]: C_j - C_i >= 1 / r_j (hours); x[j,t] <= 1 - u[i,t+1] (shares)."""
    for j, preds in enumerate(model.fleet.predecessors):
        for i in preds:
            model.m.row([(model.c[j], 1.0), (model.c[i], -1.0)], lower=1.0 / model.rate(j))
            for t in range(model.slots):
                model.m.row([(model.x[j, t], 1.0), (model.u[i, t + 1], 1.0)], upper=1.0)


def energy_bound_kwh(queue: NightQueue, fleet: Fleet, hours: float) -> float:
    """idle draw x max(night hours, max_j F_j) + sum_j W_j x min over eligible (g, l) of (cap - idle_w) / speed, in
    kWh; F_j the job's earliest finish (Fleet.earliest_finishes), so the idle draw runs at least until the last job
    can end (hardheavy-1 of bench/night_queues_other.py: a 34.4-h job on an 8-h night)."""
    horizon = max([hours, *(f for f in fleet.earliest_finishes if math.isfinite(f))])
    extra = 0.0
    for j, job in enumerate(queue.jobs):
        extra += job.work_hours * min(
            (queue.devices[g].power_levels[level].cap_w - queue.devices[g].idle_w) / fleet.speed(j, g, level)
            for g in fleet.eligible_groups[j]
            for level in range(len(queue.devices[g].power_levels))
        )
    return (fleet.idle_w * horizon + max(0.0, extra)) / 1000.0


def night_bound(
    queue: NightQueue,
    *,
    hours: float,
    horizon_hours: float | None = None,
    slot_hours: float = BOUND_SLOT_HOURS,
    time_limit_s: float = BOUND_TIME_LIMIT_S,
    mip: bool = True,
    mip_gap: float = BOUND_MIP_GAP,
    max_columns: int = BOUND_MAX_COLUMNS,
) -> NightBound:
    """Lower bounds on weighted mean completion and energy of any timeline of `queue` that finishes every job.

    Slots of `slot_hours` up to `horizon_hours` (default `hours`), longer where the queue is too large (`grid`);
    the tail slot covers the rest. The LP relaxation first, then, with `mip`, the MILP until `time_limit_s` in all.
    Skipped (status skipped, with the reason) where even BOUND_MIN_SLOTS are over `max_columns` placement columns,
    or without time left."""
    started = time.monotonic()
    deadline = started + time_limit_s
    fleet = Fleet(queue)
    if not queue.jobs:
        return NightBound(status=BoundStatus.skipped, reason="no jobs")
    if any(fleet.best_speedup(j) <= 0 for j in range(len(queue.jobs))):
        return NightBound(status=BoundStatus.skipped, reason="a job has no devices it can run on")
    energy = energy_bound_kwh(queue, fleet, hours) * (1 - SAFETY)
    horizon = max(hours, horizon_hours or 0.0)
    edges = grid(queue, fleet, hours, horizon, slot_hours, max_columns)
    slot = max(edges[t + 1] - edges[t] for t in range(len(edges) - 1))
    columns = placement_columns(queue, fleet, len(edges) - 1)
    # Two small LPs of jobs x groups columns (fair_bound): milliseconds beside the time-indexed model.
    fair_limit = max(0.0, min(FAIR_BOUND_SHARE * time_limit_s, deadline - time.monotonic()))
    common = {
        "slot_hours": slot,
        "slots": len(edges),
        "energy_bound_kwh": energy,
        "fairness_bound": fairness_upper_bound(queue, fleet, hours, fair_limit),
        "max_rho_bound": max_rho_lower_bound(queue, fleet, fair_limit),
    }
    if columns > max_columns:
        return NightBound(
            status=BoundStatus.skipped,
            reason=f"{columns} placement columns over the limit of {max_columns}",
            **common,
        )
    model = build(queue, fleet, edges)
    h, integer = model.m.to_highs()
    lp = run_highs(h, wall_deadline=deadline, mip_gap=mip_gap, relax=True, integer_columns=integer, presolve=True)
    if lp.outcome is Outcome.infeasible:
        return NightBound(
            status=BoundStatus.skipped,
            reason="the relaxation is infeasible (the idle draw alone is over a budget)",
            **common,
        )
    if lp.outcome is not Outcome.optimal or lp.incumbent is None:
        return NightBound(
            status=BoundStatus.skipped,
            reason=f"the LP relaxation stopped before its optimum ({lp.outcome.value}) within {time_limit_s:g} s",
            **common,
        )
    bound, optimum = lp.incumbent, None
    reason: str | None = "LP relaxation"
    if mip and not h.is_solver_running():
        milp = run_highs(h, wall_deadline=deadline, mip_gap=mip_gap, presolve=True)
        if milp.bound is not None and milp.bound > bound:
            bound = milp.bound
            reason = "MILP dual bound at its time limit"
        if milp.outcome is Outcome.optimal and milp.incumbent is not None:
            optimum, reason = milp.incumbent, None
        logger.debug("night bound MILP %s: %s / %s", milp.outcome.value, milp.incumbent, milp.bound)
    logger.debug("night bound: %s in %.2f s", reason or "MILP optimum", time.monotonic() - started)
    return NightBound(
        status=BoundStatus.optimal if optimum is not None else BoundStatus.bound,
        reason=reason,
        weighted_completion_bound_hours=bound - SAFETY * max(1.0, abs(bound)),
        weighted_completion_optimum_hours=optimum,
        **common,
    )


def with_gaps(bound: NightBound, summary: NightSummary) -> NightBound:
    """The bound with the plan's gaps to it: (plan - bound) / plan; weighted completion only when every job ran
    (the summary's mean is over finished jobs)."""
    update: dict[str, object] = {}
    if bound.energy_bound_kwh is not None and summary.energy_kwh > 0:
        update["energy_gap"] = (summary.energy_kwh - bound.energy_bound_kwh) / summary.energy_kwh
    wmct = summary.weighted_mean_completion_hours
    if bound.weighted_completion_bound_hours is not None and wmct:
        if summary.never_ran:
            update["reason"] = f"{len(summary.never_ran)} jobs never ran: weighted completion not comparable"
        else:
            update["weighted_completion_gap"] = (wmct - bound.weighted_completion_bound_hours) / wmct
    if bound.fairness_bound is not None and summary.fairness is not None and bound.fairness_bound > 0:
        update["fairness_gap"] = max(0.0, (bound.fairness_bound - summary.fairness) / bound.fairness_bound)
    if bound.max_rho_bound is not None and summary.max_rho and not summary.never_ran:
        update["max_rho_gap"] = max(0.0, (summary.max_rho - bound.max_rho_bound) / summary.max_rho)
    return bound.model_copy(update=update)
