"""`optsched.replan`: a new plan after a change that keeps what runs and moves as little as it pays to.

The changed workload is planned with the core MILP plus a move cost in the objective (an `ExtraObjective`),
warm-started from the current plan. A running job is *moved* when its device groups or its device count in any
group change (a new cap alone is not a move); a moved job loses `move_cost_hours` of its run to the
checkpoint-restart, which the objective charges linearly:

* weighted_speedup: pi_j = w_j S_j h / (T_j + h): a job of speedup S_j and runtime T_j = W_j / S_j that
  loses h hours finishes after T_j + h, so its effective speedup falls from S_j to S_j T_j / (T_j + h);
* min_power: pi_j = P_j h / (T_j + h) (W): the restart's energy P_j h spread over the job's run, P_j the caps
  of its devices;

with S_j, T_j and P_j taken from the current plan. Pinned jobs pay a cost above any objective instead, so
they move only when nothing else is possible; a pin that cannot hold (its devices failed, or no plan keeps
it within the budgets and deadlines) is dropped, said in `pins_impossible` and in the plan's warnings.

Two solves share the time limit. A solve proven within the relative gap may still carry moves cheaper than the
gap (on M workloads a move costs ~0.01-1 of a ~2,400 objective), so the first solve keeps what runs: every move
costs at least half the gap's worth of the current objective there. Its plan seeds the second solve, the one
returned, whose objective is the net one above; it keeps the seed unless another plan has a better net objective.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from optsched.explain.suggestions import suggest_changes
from optsched.model.builder import ModelBuilder as Builder
from optsched.model.builder import Row, Term
from optsched.model.constraints import ExtraFunctionality
from optsched.model.data import ModelData
from optsched.model.objectives import OBJECTIVES, ExtraObjective
from optsched.replan.schema import (
    MOVES,
    Change,
    ChangeKind,
    InvalidChange,
    JobChange,
    PinBreak,
    Reason,
    Replan,
    apply_change,
)
from optsched.schema.errors import FieldError, InvalidPlan, InvalidWorkload
from optsched.schema.limits import Limits, check_size
from optsched.schema.plan import Allocation, Plan, Status
from optsched.schema.workload import Workload
from optsched.solve.extract import relative_gap
from optsched.solve.options import SolveOptions
from optsched.solve.planner import solve_workload
from optsched.verify.placement import load_plan

log = logging.getLogger(__name__)

# The first solve (keep what runs) adds KEEP_FLOOR x mip_gap x |current objective| to every move's cost, may
# take KEEP_SHARE of the time limit and stops at KEEP_GAP_FACTOR x mip_gap: it only seeds the net solve. Chosen
# on M workloads (bench/replan.py): a floor of the whole gap or the plain gap let it run into its time limit.
KEEP_SHARE = 0.3
KEEP_GAP_FACTOR = 2.0
KEEP_FLOOR = 0.5
# The solves after the first get at least this share of the time limit, even past the deadline.
MIN_SHARE = 0.1
# The elastic MILP behind the suggestions of an infeasible re-plan gets at most this long (as optsched.plan).
SUGGESTION_TIME_LIMIT_S = 20.0

GroupCounts = dict[str, int]  # device group id -> devices
WorkloadSource = Workload | Mapping[str, Any] | str | Path
PlanSource = Plan | Mapping[str, Any] | str | Path
ChangeSource = Change | Mapping[str, Any] | str | Path


def replan(
    workload: WorkloadSource,
    plan: PlanSource,
    change: ChangeSource,
    *,
    move_cost_hours: float | None = None,
    time_limit_s: float | None = None,
    mip_gap: float | None = None,
    threads: int | None = None,
    limits: Limits | None = None,
    original: Workload | None = None,
    extra_functionality: ExtraFunctionality | None = None,
) -> Replan:
    """Re-plan `workload` (as `plan` placed it) after `change`; never mutates its inputs.

    `move_cost_hours` (default: the workload's `options.move_cost_hours`) is what each moved running job loses;
    `extra_functionality(b, data)` adds rows to every solve (as in optsched.plan), e.g. a site's placement rules.
    Raises InvalidWorkload (the workload), InvalidPlan (the plan, or a plan naming jobs or device groups the
    workload lacks) and InvalidChange (the change, alone or against them, and the changed workload above
    `limits`), each listing every problem: `check_change` runs the same checks without solving. An infeasible
    changed workload gives an infeasible plan with its diagnosis and suggestions, and no changes.
    """
    started = time.monotonic()
    before, current, change, running, after = _checked(workload, plan, change, limits, original)
    hours = after.options.move_cost_hours if move_cost_hours is None else float(move_cost_hours)
    if not (math.isfinite(hours) and 0 <= hours <= 1_000):
        raise ValueError(f"move_cost_hours must be within 0-1000 h, not {move_cost_hours!r}")

    # A job removed and added again under its id is a new job: it starts afresh, with no move to charge.
    kept_running = {j.id: running[j.id] for j in after.jobs if j.id in running and j.id not in change.remove_jobs}
    costs = move_costs(after, current, hours)
    pins = dict.fromkeys(change.pin)
    broken: dict[str, str] = _pins_without_room(after, kept_running, pins)
    limit = after.options.time_limit_s if time_limit_s is None else time_limit_s
    gap = after.options.mip_gap if mip_gap is None else mip_gap
    deadline = started + limit
    solve = _Solver(after, limit, gap, threads, deadline, extra_functionality)
    cost = _MoveCost(
        before={j: group_counts(a) for j, a in kept_running.items()}, costs=costs, pinned=frozenset(pins) - set(broken)
    )
    warm = {j: _counts_by_cap(a) for j, a in kept_running.items()}
    new: Plan | None = None
    worth = net_units(after, current)
    if kept_running and hours > 0 and worth:
        # First keep what runs: every move costs at least half the gap's worth of the current objective, so this
        # plan has hardly a move it could do without (a solve within the gap may otherwise hide many cheap ones).
        # It seeds the net solve, which keeps it unless another plan has a better net objective.
        keep = replace(cost, floor=KEEP_FLOOR * gap * abs(worth))
        kept, _ = solve(keep, warm, share=KEEP_SHARE, gap_factor=KEEP_GAP_FACTOR)
        if kept.status is Status.infeasible:
            new, net = kept, _Net()
        elif kept.feasible:
            warm = {p.job: _counts_by_cap(p.allocations) for p in kept.placements if p.admitted}
    if new is None:
        new, net = solve(cost, warm)
    if new.feasible:
        missed = [j for j in cost.pinned if _moved(kept_running[j], _placement(new, j))]
        if missed:
            # Pins cost more than any objective, so a broken one means no plan keeps it: solve again without
            # it so the bound and gap are about the ordinary move cost.
            reason = "no plan keeps its devices within the budgets, deadlines and hard jobs" + (
                # The max-min comes first and ignores pins (optsched.solve.fairness).
                " and the fairness floor" if OBJECTIVES[after.objective].fair else "")
            for j in missed:
                broken[j] = reason
            cost = replace(cost, pinned=cost.pinned - set(missed))
            warm = {p.job: _counts_by_cap(p.allocations) for p in new.placements if p.admitted}
            new, net = solve(cost, warm)

    if new.status is Status.infeasible:
        suggestions = suggest_changes(after, time_limit_s=max(1.0, min(SUGGESTION_TIME_LIMIT_S, limit)))
        new = new.model_copy(update={"suggestions": tuple(suggestions)})
    value = net_units(after, new)
    if not new.feasible or new.objective is None or value is None:
        return Replan(
            workload=after, plan=new, moved=0, restart_hours=0.0, move_cost_hours=hours, move_cost=0.0,
            net_objective=None, net_bound=None, net_gap=None,
            pins_impossible=tuple(PinBreak(job=j, reason=r) for j, r in broken.items()),
            solve_seconds=time.monotonic() - started,
        )

    changes = describe_changes(before, after, change, current, new, running, hours, pinned=set(pins))
    moved = [c for c in changes if c.kind in MOVES and c.reason is not Reason.removed]
    move_cost = sum(costs.get(c.job, 0.0) for c in moved)
    sense = OBJECTIVES[after.objective].sense
    net_objective = value - move_cost if sense == "max" else value + move_cost
    pin_breaks = tuple(PinBreak(job=j, reason=r) for j, r in broken.items())
    warnings = tuple(f"pin of job {b.job!r} impossible: {b.reason}" for b in pin_breaks)
    new = new.model_copy(update={"bound": None, "gap": None, "warnings": new.warnings + warnings})
    return Replan(
        workload=after,
        plan=new,
        changes=changes,
        moved=len(moved),
        restart_hours=sum(c.restart_hours for c in changes),
        move_cost_hours=hours,
        move_cost=move_cost,
        net_objective=net_objective,
        net_bound=net.bound,
        net_gap=relative_gap(net_objective, net.bound) if net.bound is not None else None,
        pins_impossible=pin_breaks,
        solve_seconds=time.monotonic() - started,
    )


def net_units(workload: Workload, plan: Plan) -> float | None:
    """What the move cost is weighed against: the plan's objective, or under a fairness objective its weighted
    speedup (the second solve's objective, which the move cost joins; optsched.solve.fairness)."""
    return plan.weighted_speedup if OBJECTIVES[workload.objective].fair else plan.objective


def running_allocations(workload: Workload, plan: Plan) -> dict[str, tuple[Allocation, ...]]:
    """Job id -> its allocations, for every job the plan admits; InvalidPlan if the plan names a job or a device
    group the workload does not have (every such path at once)."""
    jobs = {j.id for j in workload.jobs}
    groups = {g.id for g in workload.devices}
    problems: list[FieldError] = []
    out: dict[str, tuple[Allocation, ...]] = {}
    for i, p in enumerate(plan.placements):
        if not p.admitted or not p.allocations:
            continue
        if p.job not in jobs:
            problems.append(FieldError(f"placements[{i}].job", f"job {p.job!r} is not in the workload"))
        for k, a in enumerate(p.allocations):
            if a.device not in groups:
                problems.append(
                    FieldError(
                        f"placements[{i}].allocations[{k}].device", f"device group {a.device!r} is not in the workload"
                    )
                )
        out[p.job] = p.allocations
    if problems:
        raise InvalidPlan(problems)
    return out


def check_change(
    workload: WorkloadSource,
    plan: PlanSource,
    change: ChangeSource,
    *,
    limits: Limits | None = None,
    original: Workload | None = None,
) -> Workload:
    """The changed workload, after every check a re-plan makes before it solves, for a service to call before it
    queues one: the workload, the plan and the change, alone and against one another (a pin of a job the plan does
    not run is refused at `pin[i]`, a repair beyond the group's original count at `device_repairs[i].count`), then
    the changed workload against `limits` (jobs, devices, device groups, power levels, time limit and placement
    variables, as a plan's workload), each problem at the field of the change that brought it (`add_jobs`,
    `device_repairs`). Raises InvalidWorkload, InvalidPlan or InvalidChange listing every problem."""
    return _checked(workload, plan, change, limits, original)[4]


def _checked(
    workload: WorkloadSource,
    plan: PlanSource,
    change: ChangeSource,
    limits: Limits | None,
    original: Workload | None,
) -> tuple[Workload, Plan, Change, dict[str, tuple[Allocation, ...]], Workload]:
    """(workload, plan, change, running allocations, changed workload), every check of `check_change` passed."""
    before = Workload.load(workload)
    current = load_plan(plan)
    change = Change.load(change)
    if limits is not None:
        check_growth(before, change, limits)
    running = running_allocations(before, current)
    after = _apply(before, change, running, original)
    if limits is not None:
        try:
            check_size(after, limits)
        except InvalidWorkload as exc:
            raise InvalidChange([_limit_path(e) for e in exc.errors]) from None
    return before, current, change, running, after


def check_growth(workload: Workload, change: Change, limits: Limits) -> None:
    """InvalidChange when counting alone shows the changed workload above `limits`: jobs (kept + added) and
    placement variables (jobs x power levels). Linear in the change and without building the changed workload, so
    40,000 added jobs are refused before apply_change validates each of them. (Devices need no count: repairs
    never go beyond a group's original count, which apply_change checks before it builds anything.)"""
    ids = {j.id for j in workload.jobs}
    removed = {job_id for job_id in change.remove_jobs if job_id in ids}
    jobs = len(workload.jobs) - len(removed) + len(change.add_jobs)
    problems: list[FieldError] = []
    if limits.jobs is not None and jobs > limits.jobs:
        problems.append(FieldError("jobs", f"{jobs:,} jobs, above the limit of {limits.jobs:,} (OPTSCHED_MAX_JOBS)"))
    elif limits.variables is not None:
        variables = jobs * sum(len(g.power_levels) for g in workload.devices)
        if variables > limits.variables:
            problems.append(FieldError("jobs", (
                f"{jobs:,} jobs x the fleet's power levels = {variables:,} placement variables, above the limit of "
                f"{limits.variables:,} (OPTSCHED_MAX_VARIABLES)"
            )))
    if problems:
        raise InvalidChange([_limit_path(e) for e in problems])


def _limit_path(error: FieldError) -> FieldError:
    """A size limit the changed workload is above, at the change's field that adds what it counts."""
    field = error.path.split(".")[0].split("[")[0]
    path = {"jobs": "add_jobs", "devices": "device_repairs"}.get(field, "")
    return FieldError(path, f"the changed workload is too large ({error.path or '<document>'}): {error.message}")


def _apply(
    workload: Workload, change: Change, running: Mapping[str, Any], original: Workload | None = None
) -> Workload:
    """apply_change, with pins of jobs the plan does not run reported among its problems (all at once)."""
    known = {j.id for j in workload.jobs} | {j.id for j in change.add_jobs}  # apply_change names the others
    problems = [
        FieldError(f"pin[{i}]", f"job {job_id!r} is not running in the plan; only running jobs can be pinned")
        for i, job_id in enumerate(change.pin)
        if job_id not in running and job_id in known
    ]
    try:
        after = apply_change(workload, change, original=original)
    except InvalidChange as exc:
        raise InvalidChange([*exc.errors, *problems]) from None
    if problems:
        raise InvalidChange(problems)
    return after


def group_counts(allocations) -> GroupCounts:
    """Devices per group, whatever their caps (what decides whether a job moved)."""
    out: GroupCounts = {}
    for a in allocations:
        out[a.device] = out.get(a.device, 0) + a.count
    return out


def _counts_by_cap(allocations) -> dict[tuple[str, float], int]:
    out: dict[tuple[str, float], int] = {}
    for a in allocations:
        out[a.device, a.cap_w] = out.get((a.device, a.cap_w), 0) + a.count
    return out


def _placement(plan: Plan, job: str) -> tuple[Allocation, ...]:
    return next((p.allocations for p in plan.placements if p.job == job and p.admitted), ())


def _moved(before, after) -> bool:
    return group_counts(before) != group_counts(after)


def moved_jobs(current: Plan, new: Plan, workload: Workload) -> tuple[str, ...]:
    """Jobs running in `current` and still in `workload` whose device groups or counts differ in `new` (stopped
    included): the moves a re-plan and a fresh plan are compared on."""
    ids = {j.id for j in workload.jobs}
    return tuple(
        p.job
        for p in current.placements
        if p.admitted and p.job in ids and _moved(p.allocations, _placement(new, p.job))
    )


def move_costs(workload: Workload, current: Plan, move_cost_hours: float) -> dict[str, float]:
    """pi_j per running job of `workload`, in objective units: w_j S_j h / (T_j + h) for weighted_speedup,
    P_j h / (T_j + h) W for min_power (S_j, T_j, P_j from `current`; module docstring)."""
    jobs = {j.id: j for j in workload.jobs}
    h = move_cost_hours
    out: dict[str, float] = {}
    for p in current.placements:
        if not p.admitted or p.job not in jobs or p.runtime_hours is None or h == 0:
            continue
        share = h / (p.runtime_hours + h)
        if workload.objective == "min_power":
            out[p.job] = sum(a.count * a.cap_w for a in p.allocations) * share
        else:
            out[p.job] = jobs[p.job].objective_weight * p.speedup * share
    return out


@dataclass(frozen=True)
class _MoveCost:
    """The move cost as an ExtraObjective: one binary `moved[j]` per running job, its cost in the objective."""

    before: dict[str, GroupCounts]  # running job -> devices per group in the current plan
    costs: dict[str, float]  # running job -> pi_j (objective units)
    pinned: frozenset[str] = field(default_factory=frozenset)
    floor: float = 0.0  # added to every running job's pi_j (the first, keep-what-runs solve)

    def extra(self) -> ExtraObjective:
        return ExtraObjective(add=self.add, value=self.value)

    def cost(self, data: ModelData, job: str) -> float:
        """pi_j, or for a pinned job a cost above any objective difference (so that it moves only if it must)."""
        if job in self.pinned:
            return _pin_cost(data)
        return self.costs.get(job, 0.0) + self.floor

    def _sign(self, data: ModelData) -> float:
        return -1.0 if OBJECTIVES[data.workload.objective].sense == "max" else 1.0

    def add(self, b: Builder, data: ModelData) -> list[Term]:
        jobs = [(j, job.id) for j, job in enumerate(data.jobs) if job.id in self.before and self.cost(data, job.id) > 0]
        forced = [_must_move(data, j, self.before[job_id]) for j, job_id in jobs]
        b.add_variables("moved", [j for j, _ in jobs], [float(f) for f in forced], [1.0] * len(jobs), integer=True)
        free = [(j, job_id) for (j, job_id), f in zip(jobs, forced, strict=True) if not f]
        add_move_indicators(b, data, {j: self.before[job_id] for j, job_id in free})
        sign = self._sign(data)
        return [("moved", j, sign * self.cost(data, job_id)) for j, job_id in jobs]

    def value(self, data: ModelData, counts: Mapping[tuple[int, int, int], int]) -> float:
        now: dict[int, GroupCounts] = {}
        for (j, g, _), n in counts.items():
            if n > 0:
                per = now.setdefault(j, {})
                per[data.groups[g].id] = per.get(data.groups[g].id, 0) + n
        total = sum(
            self.cost(data, job.id)
            for j, job in enumerate(data.jobs)
            if job.id in self.before and now.get(j, {}) != self.before[job.id]
        )
        return self._sign(data) * total


def _pin_cost(data: ModelData) -> float:
    """More than the whole objective can vary: 1 + sum_j w_j best S_j (max), 1 + peak power in W (min)."""
    if OBJECTIVES[data.workload.objective].sense == "max":
        return 1.0 + sum(job.objective_weight * data.best_speedup(j) for j, job in enumerate(data.jobs))
    return 1.0 + data.peak_power_w


def _must_move(data: ModelData, j: int, before: GroupCounts) -> bool:
    """A group it used is gone or no longer eligible, or it held more devices than it may now have."""
    groups = {data.groups[o.group].id for o in data.options_of_job[j]}
    return any(g not in groups for g in before) or sum(before.values()) > data.max_devices(j)


def add_move_indicators(b: Builder, data: ModelData, before: Mapping[int, GroupCounts]) -> None:
    """sum_l n[j,g,l] + c_jg moved_j >= c_jg for each group g job j used, and sum_{g,l} n[j,g,l] - (U_j - C_j) moved_j
    <= C_j (devices; c_jg its devices in g, C_j their sum, U_j its most devices): moved_j = 0 keeps them exactly."""
    if not before:
        return
    index = {g.id: i for i, g in enumerate(data.groups)}
    keep: list[Row] = []
    total: list[Row] = []
    for j, counts in before.items():
        for group_id, c in counts.items():
            g = index[group_id]
            terms: list[Term] = [("n", o.key, 1.0) for o in data.options_of_job[j] if o.group == g]
            keep.append(((j, g), terms + [("moved", j, float(c))], float(c), math.inf))
        held = float(sum(counts.values()))
        spare = max(0.0, data.max_devices(j) - held)
        terms = [("n", o.key, 1.0) for o in data.options_of_job[j]]
        total.append((j, terms + [("moved", j, -spare)], -math.inf, held))
    b.add_rows("move_keep", keep)
    b.add_rows("move_total", total)


def _pins_without_room(workload: Workload, running: Mapping[str, tuple[Allocation, ...]], pins) -> dict[str, str]:
    """Pins that cannot hold whatever the plan: a group they used is gone, ineligible, or too small for the pinned
    jobs before them in `pin` order."""
    groups = {g.id: g for g in workload.devices}
    data = ModelData(workload)
    eligible = {
        job.id: {data.groups[o.group].id for o in data.options_of_job[j]} for j, job in enumerate(workload.jobs)
    }
    limits = {job.id: data.max_devices(j) for j, job in enumerate(workload.jobs)}
    taken: dict[str, int] = {}
    out: dict[str, str] = {}
    for job_id in pins:
        counts = group_counts(running[job_id])
        gone = sorted(g for g in counts if g not in groups)
        barred = sorted(g for g in counts if g in groups and g not in eligible[job_id])
        short = sorted(g for g, c in counts.items() if g in groups and taken.get(g, 0) + c > groups[g].count)
        if gone:
            out[job_id] = f"device group {gone[0]!r} it used has no device left"
        elif barred:
            out[job_id] = f"device group {barred[0]!r} it used is no longer eligible for it"
        elif sum(counts.values()) > limits[job_id]:
            out[job_id] = f"it held {sum(counts.values())} devices; it may now have at most {limits[job_id]}"
        elif short:
            g = short[0]
            out[job_id] = (
                f"device group {g!r} has {groups[g].count} devices left; it held {counts[g]}"
                + (f" and pinned jobs listed before it hold {taken[g]}" if taken.get(g) else "")
            )
        else:
            for g, c in counts.items():
                taken[g] = taken.get(g, 0) + c
    return out


@dataclass
class _Net:
    incumbent: float | None = None
    bound: float | None = None

    def __call__(self, seconds: float, incumbent: float | None, bound: float | None) -> None:
        self.incumbent, self.bound = incumbent, bound


@dataclass(frozen=True)
class _Solver:
    """The core solve loop with a move cost, every solve of one re-plan within one wall-clock deadline."""

    workload: Workload
    time_limit_s: float
    mip_gap: float
    threads: int | None
    deadline: float
    extra_functionality: ExtraFunctionality | None = None

    def __call__(self, cost: _MoveCost, warm, share: float = 1.0, gap_factor: float = 1.0) -> tuple[Plan, _Net]:
        limit = self.time_limit_s
        seconds = max(MIN_SHARE * limit, min(share * limit, self.deadline - time.monotonic()))
        net = _Net()
        log.debug("re-plan solve: floor %.3g, %.1f s, gap x%g", cost.floor, seconds, gap_factor)
        plan = solve_workload(self.workload, SolveOptions(
            time_limit_s=seconds, mip_gap=min(1.0, self.mip_gap * gap_factor), threads=self.threads, warm_start=warm,
            extra_objective=cost.extra(), progress=net, extra_functionality=self.extra_functionality,
        ))
        return plan, net


def describe_changes(
    before: Workload,
    after: Workload,
    change: Change,
    current: Plan,
    new: Plan,
    running: Mapping[str, tuple[Allocation, ...]],
    move_cost_hours: float,
    *,
    pinned: frozenset[str] | set[str] = frozenset(),
) -> tuple[JobChange, ...]:
    """Per job, what the new plan does to it and why: running jobs the change removed first, then every job of the
    changed workload in its order."""
    why = _Causes.of(before, after, change, current, running)
    out = [
        JobChange(job=job_id, kind=ChangeKind.stopped, reason=Reason.removed, detail="removed by the change",
                  restart_hours=0.0, before=allocs)
        for job_id, allocs in running.items()
        if job_id in set(change.remove_jobs)
    ]
    replaced = set(change.remove_jobs)
    added = {j.id for j in change.add_jobs}
    for job in after.jobs:
        old = () if job.id in replaced else running.get(job.id, ())
        new_allocs = _placement(new, job.id)
        kind = _kind(old, new_allocs)
        if kind is ChangeKind.started:
            reason = Reason.added if job.id in added else Reason.better_use
            detail = "added by the change" if reason is Reason.added else "started on devices or watts now free"
        elif kind is ChangeKind.kept:
            reason = Reason.pinned if job.id in pinned else Reason.unchanged
            detail = "keeps its devices and caps" if old else "still waiting"
            if job.id in added:
                reason, detail = Reason.added, "added by the change; not started"
        else:
            reason, detail = why.reason(job.id, kind, new_allocs)
        out.append(
            JobChange(
                job=job.id,
                kind=kind,
                reason=reason,
                detail=detail,
                restart_hours=move_cost_hours if kind in MOVES else 0.0,
                pinned=job.id in pinned,
                before=old,
                after=new_allocs,
            )
        )
    return tuple(out)


def _draw(allocations) -> float:
    return sum(a.count * a.cap_w for a in allocations)


def _kind(old, new) -> ChangeKind:
    if not old:
        return ChangeKind.started if new else ChangeKind.kept
    if not new:
        return ChangeKind.stopped
    before, after = group_counts(old), group_counts(new)
    if before == after:
        return ChangeKind.kept if _counts_by_cap(old) == _counts_by_cap(new) else ChangeKind.recapped
    return ChangeKind.resized if set(before) == set(after) else ChangeKind.moved


@dataclass(frozen=True)
class _Causes:
    """Which device groups lost devices the current plan needed, and which budgets fell below its draw."""

    short_groups: dict[str, str]  # group id -> what happened to it, in words
    low_scopes: dict[str | None, str]  # None (the fleet) or a domain -> what happened, in words
    domain_of: dict[str, str | None]
    running: Mapping[str, tuple[Allocation, ...]]

    @classmethod
    def of(cls, before: Workload, after: Workload, change: Change, current: Plan, running) -> _Causes:
        used: dict[str, int] = {}
        for allocs in running.values():
            for g, c in group_counts(allocs).items():
                used[g] = used.get(g, 0) + c
        now = {g.id: g.count for g in after.devices}
        short = {
            g.id: f"device group {g.id!r} lost devices: {now.get(g.id, 0)} left, the plan used {used[g.id]}"
            for g in before.devices
            if used.get(g.id, 0) > now.get(g.id, 0)
        }
        low: dict[str | None, str] = {}
        if change.budget_w is not None and change.budget_w < current.power_w - 1e-6:
            low[None] = f"the fleet budget fell to {change.budget_w:,.0f} W, below the {current.power_w:,.0f} W drawn"
        for d, watts in change.domains.items():
            drawn = current.power_by_domain.get(d)
            if drawn is not None and watts < drawn - 1e-6:
                low[d] = f"the {d} budget fell to {watts:,.0f} W, below the {drawn:,.0f} W drawn"
        return cls(short, low, {g.id: g.domain for g in before.devices}, running)

    def reason(self, job: str, kind: ChangeKind, new: tuple[Allocation, ...]) -> tuple[Reason, str]:
        """A failed device if it lost devices in a group that lost devices the plan used; the budget if it now
        draws less under a budget that fell below the plan's draw; a better use otherwise."""
        old = self.running.get(job, ())
        before, after = group_counts(old), group_counts(new)
        hit = [self.short_groups[g] for g, c in before.items() if g in self.short_groups and after.get(g, 0) < c]
        if hit:
            return Reason.failed_device, hit[0]
        domains = {self.domain_of.get(g) for g in before}
        scopes = [None, *sorted(d for d in domains if d is not None)]
        low = [self.low_scopes[s] for s in scopes if s in self.low_scopes]
        if low and _draw(new) < _draw(old):
            return Reason.budget, low[0]
        return Reason.better_use, {
            ChangeKind.recapped: "new caps serve the objective better",
            ChangeKind.resized: "other device counts serve the objective better, restart included",
            ChangeKind.moved: "other devices serve the objective better, restart included",
            ChangeKind.stopped: "its devices or watts serve other jobs better",
        }[kind]
