"""The night queue (a workload with a timeline's fields) and the night plan: a timeline of segments per job,
power per event and a summary (immutable, JSON-ready).

`NightQueue` extends the core `Workload`: its jobs (`NightJob`) have releases, dependencies, checkpoints and
restart costs; its power (`NightPower`) has windows; the queue lists device failures and the defaults its
jobs fall back on. The core workload rejects these fields, naming their paths.

Times are given twice: as hours after the night starts (exact, what the verifier checks) and as ISO 8601
timestamps (start + hours, to the second, for people and spreadsheets).
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from optsched.schema.errors import FieldError
from optsched.schema.workload import (
    Frozen,
    Hours,
    Id,
    Job,
    NonNegativeFloat,
    Power,
    PowerWindow,
    StrictBool,
    StrictInt,
    Workload,
    _semantic_problems,
    _SemanticProblems,
)

# Hours of progress between two checkpoints of a job that sets none and whose queue sets none.
DEFAULT_CHECKPOINT_HOURS = 1.0
# Hours a critical / high job without a deadline may wait after it is ready, when its queue sets nothing else.
DEFAULT_MAX_WAIT_HOURS = {"critical": 1.0, "high": 2.0}


class NightJob(Job):
    """A job of the night queue: a core job with a release, dependencies, checkpoints and a restart cost."""

    release_hours: NonNegativeFloat = Field(default=0.0, description="Earliest start, in hours after the night starts.")
    after: tuple[Id, ...] = Field(
        default=(), max_length=10_000, description="Ids of jobs that must finish before this one starts."
    )
    checkpoint_hours: Hours | None = Field(
        default=None,
        description="Hours of progress between two checkpoints; a device failure loses the work since the last one "
        "(null: the queue's defaults.checkpoint_hours).",
    )
    restart_hours: NonNegativeFloat | None = Field(
        default=None,
        le=1e6,
        description="Hours a (re)start from a checkpoint holds the devices without progress: after a preemption, "
        "a move, a change of devices or a failure (null: the queue's defaults, else plan_night's restart_hours).",
    )
    elastic: StrictBool | None = Field(
        default=None,
        description="Whether the planner may grow, shrink or move the running job, paying restart_hours "
        "(null: the queue's defaults.elastic).",
    )


class NightPower(Power):
    windows: tuple[PowerWindow, ...] = Field(
        default=(), max_length=1_000, description="Hours in which another global budget applies."
    )

    def budget_at(self, hours: float) -> float | None:
        """The global budget in force at `hours` after the night starts (W): a window's, else budget_w."""
        for window in self.windows:
            if window.from_hours <= hours < window.to_hours:
                return window.budget_w
        return self.budget_w


class DeviceFailure(Frozen):
    """`count` devices of group `device` fail at `at_hours` and are back `repair_hours` later.

    The devices that fail are the group's lowest-indexed ones that are up at that instant; a job holding one
    loses the work since its last checkpoint and is planned again (or waits for the repair)."""

    device: Id = Field(description="Device group id.")
    count: StrictInt = Field(default=1, ge=1, le=1_000_000)
    at_hours: NonNegativeFloat = Field(description="When they fail, hours after the night starts.")
    repair_hours: Hours = Field(description="Hours until they are back.")

    @property
    def back_hours(self) -> float:
        return self.at_hours + self.repair_hours


class NightDefaults(Frozen):
    """What a night job falls back on when it does not set its own value."""

    checkpoint_hours: Hours = DEFAULT_CHECKPOINT_HOURS
    restart_hours: NonNegativeFloat | None = Field(
        default=None, le=1e6, description="Restart cost in hours (null: plan_night's restart_hours argument)."
    )
    elastic: StrictBool = True
    max_wait_hours: dict[str, NonNegativeFloat] = Field(
        default_factory=lambda: dict(DEFAULT_MAX_WAIT_HOURS),
        description="Per priority (critical, high): hours a ready job without a deadline may wait before it is "
        "started ahead of others (its wait is bounded and reported).",
    )


class NightQueue(Workload):
    """The night's queue: a workload whose jobs have releases and dependencies, with power windows, device
    failures and defaults."""

    jobs: tuple[NightJob, ...] = ()
    power: NightPower = NightPower()
    failures: tuple[DeviceFailure, ...] = Field(default=(), max_length=10_000)
    defaults: NightDefaults = NightDefaults()
    night_fairness: Literal["progress", "finish_time"] = Field(
        default="progress",
        description="Under a fairness objective (max_min_speedup, team_max_min), what the night equalises: "
        "'progress', the objective's max-min over each job's (team's) share of its work done by morning, or "
        "'finish_time', the largest finish-time fairness rho (docs/guides/fairness.md).",
    )

    @model_validator(mode="after")
    def consistent(self) -> NightQueue:
        problems = _semantic_problems(self) + _night_problems(self)
        if problems:
            raise _SemanticProblems(problems)
        return self

    @property
    def failure_events(self) -> int:
        """Events the failures add to the night: each failure and its repair is an instant the planner stops at
        and re-plans (what a cost budget counts, besides the jobs)."""
        return 2 * len(self.failures)

    def checkpoint_hours(self, j: int) -> float:
        job = self.jobs[j]
        return job.checkpoint_hours if job.checkpoint_hours is not None else self.defaults.checkpoint_hours

    def restart_hours(self, j: int, default: float) -> float:
        """Job j's restart cost: its own, else the queue's default, else `default` (plan_night's argument)."""
        job = self.jobs[j]
        if job.restart_hours is not None:
            return job.restart_hours
        return self.defaults.restart_hours if self.defaults.restart_hours is not None else default

    def elastic(self, j: int) -> bool:
        job = self.jobs[j]
        return job.elastic if job.elastic is not None else self.defaults.elastic


def _night_problems(q: NightQueue) -> list[FieldError]:
    problems = _dependency_problems(q.jobs)
    problems.extend(_window_problems(q.power.windows))
    problems.extend(_failure_problems(q))
    for name in sorted(set(q.defaults.max_wait_hours) - {"critical", "high"}):
        problems.append(FieldError(f"defaults.max_wait_hours.{name}", "only critical and high jobs have a bound"))
    return problems


def _failure_problems(q: NightQueue) -> list[FieldError]:
    """Each failure names a device group, and at no instant are more of a group's devices down than it has."""
    groups = {g.id: g.count for g in q.devices}
    down = devices_down_at_failures(q.failures)
    problems = []
    for i, f in enumerate(q.failures):
        if f.device not in groups:
            problems.append(FieldError(f"failures[{i}].device", f"unknown device group {f.device!r}"))
        elif down[i] > groups[f.device]:
            problems.append(
                FieldError(
                    f"failures[{i}].count",
                    f"{down[i]} devices of {f.device!r} would be down at {f.at_hours:g} h; the group has "
                    f"{groups[f.device]}",
                )
            )
    return problems


def devices_down_at_failures(failures: Sequence[DeviceFailure]) -> list[int]:
    """Per failure, the devices of its group down at its instant: the sum of the counts of the failures o of that
    group with o.at_hours <= its at_hours < o.back_hours (itself included).

    A sweep over the failures in time order with a heap of the repairs pending: O(N log N), where comparing
    every pair took 44 s for 10,000 failures (bench/failure_check.py)."""
    by_group: dict[str, list[int]] = defaultdict(list)
    for i in sorted(range(len(failures)), key=lambda i: failures[i].at_hours):
        by_group[failures[i].device].append(i)
    down = [0] * len(failures)
    for order in by_group.values():
        pending: list[tuple[float, int]] = []  # (back_hours, count) of the failures already down
        active = 0
        k = 0
        while k < len(order):
            at = failures[order[k]].at_hours
            # Failures at one instant count one another: add them all before reading the total.
            same = k
            while same < len(order) and failures[order[same]].at_hours == at:
                f = failures[order[same]]
                heapq.heappush(pending, (f.back_hours, f.count))
                active += f.count
                same += 1
            while pending and pending[0][0] <= at:
                active -= heapq.heappop(pending)[1]
            for i in order[k:same]:
                down[i] = active
            k = same
    return down


def _dependency_problems(jobs: tuple[NightJob, ...]) -> list[FieldError]:
    """Every `after` id names another job, and the dependencies form a DAG (each cycle is named)."""
    ids = {j.id for j in jobs}
    problems = []
    for i, j in enumerate(jobs):
        for k, other in enumerate(j.after):
            if other == j.id:
                problems.append(FieldError(f"jobs[{i}].after[{k}]", f"job {j.id!r} cannot come after itself"))
            elif other not in ids:
                problems.append(FieldError(f"jobs[{i}].after[{k}]", f"unknown job id {other!r}"))
    index = {j.id: i for i, j in enumerate(jobs)}
    for cycle in dependency_cycles(jobs):
        path = " -> ".join(repr(c) for c in (*cycle, cycle[0]))
        problems.append(
            FieldError(f"jobs[{index[cycle[0]]}].after", f"dependency cycle through jobs {list(cycle)}: {path}")
        )
    return problems


def dependency_cycles(jobs: tuple[NightJob, ...]) -> list[tuple[str, ...]]:
    """Cycles of the `after` graph (self-loops and unknown ids ignored), each once, from its first job in queue
    order."""
    ids = {j.id for j in jobs}
    order = {j.id: i for i, j in enumerate(jobs)}
    preds = {j.id: [p for p in dict.fromkeys(j.after) if p in ids and p != j.id] for j in jobs}
    state: dict[str, int] = {}  # 1 on the current path, 2 finished
    cycles: list[tuple[str, ...]] = []
    for root in (j.id for j in jobs):
        if root in state:
            continue
        path: list[str] = [root]
        state[root] = 1
        stack = [iter(preds[root])]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                # path[k] comes after path[k + 1]: reversed, the cycle reads in execution order.
                cycle = path[path.index(nxt) :][::-1]
                first = min(range(len(cycle)), key=lambda k: order[cycle[k]])
                rotated = tuple(cycle[first:] + cycle[:first])
                if rotated not in cycles:
                    cycles.append(rotated)
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(preds[nxt]))
    return cycles


def _window_problems(windows: tuple[PowerWindow, ...]) -> list[FieldError]:
    """Windows do not overlap: at most one replaces the global budget at any instant."""
    problems = []
    reach: int | None = None  # the window reaching furthest among those starting earlier
    for b in sorted(range(len(windows)), key=lambda i: (windows[i].from_hours, i)):
        if reach is not None and windows[b].from_hours < windows[reach].to_hours:
            a = reach
            problems.append(
                FieldError(
                    f"power.windows[{b}]",
                    f"window {windows[b].from_hours:g}-{windows[b].to_hours:g} h overlaps window "
                    f"power.windows[{a}] ({windows[a].from_hours:g}-{windows[a].to_hours:g} h)",
                )
            )
        if reach is None or windows[b].to_hours > windows[reach].to_hours:
            reach = b
    return problems




class NightStatus(StrEnum):
    met = "met"  # every job finished and every hard (critical/high) deadline was met
    missed = "missed"  # a complete timeline, but a hard deadline was missed or a job could not run; see summary


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SegmentAllocation(_Frozen):
    device: str = Field(description="Device group id.")
    devices: tuple[int, ...] = Field(description="Indices (0 .. count-1) of the group's devices the job holds.")
    cap_w: float = Field(description="Power cap of each of these devices, in watts.")
    speed: float = Field(description="Speed of each device for this job (level speed x speed_on).")

    @property
    def count(self) -> int:
        return len(self.devices)


class Segment(_Frozen):
    """An interval in which a job holds the same devices at the same caps."""

    from_hours: float
    to_hours: float
    from_: str = Field(alias="from", description="ISO 8601 timestamp of from_hours.")
    to: str = Field(description="ISO 8601 timestamp of to_hours.")
    restart: bool = Field(
        default=False,
        description="Restarting from a checkpoint (after a preemption, a move or a device failure): devices held, "
        "no progress.",
    )
    speedup: float = Field(description="Heterogeneous Amdahl speedup S over the segment (0 while restarting).")
    work_hours: float = Field(description="Reference work done in the segment: S x (to_hours - from_hours).")
    rolled_back_hours: float = Field(
        default=0.0,
        description="Reference work lost at the segment's end: a device it holds failed and the job resumes from "
        "its last checkpoint (the work done since, possibly in earlier segments).",
    )
    allocations: tuple[SegmentAllocation, ...]

    model_config = ConfigDict(
        frozen=True, extra="forbid", validate_by_name=True, validate_by_alias=True, serialize_by_alias=True
    )


class JobTimeline(_Frozen):
    job: str
    priority: str
    weight: float
    work_hours: float
    release_hours: float
    after: tuple[str, ...] = ()
    deadline_hours: float | None = None
    deadline: str | None = Field(default=None, description="ISO 8601 timestamp of deadline_hours.")
    start_hours: float | None = Field(description="First segment's start; null if the job never ran.")
    finish_hours: float | None = Field(description="Last segment's end; null if the job never ran.")
    start: str | None = None
    finish: str | None = None
    wait_hours: float | None = Field(description="From release to start (the scheduling delay users feel).")
    deadline_met: bool | None = Field(description="null when the job has no deadline.")
    reason: str | None = Field(default=None, description="Why the deadline was missed or the job never ran.")
    restarts: int = Field(default=0, description="Restart segments (runs) the job paid: preemptions, moves, failures.")
    lost_work_hours: float = Field(default=0.0, description="Reference work lost to device failures.")
    segments: tuple[Segment, ...] = ()


class NightEvent(_Frozen):
    """The state from this instant to the next event: what happened, the draw and the budgets in force."""

    at_hours: float
    at: str
    released: tuple[str, ...] = ()
    finished: tuple[str, ...] = ()
    started: tuple[str, ...] = ()
    recapped: tuple[str, ...] = Field(default=(), description="Running jobs whose caps changed at this event.")
    preempted: tuple[str, ...] = ()
    moved: tuple[str, ...] = Field(default=(), description="Running jobs given other devices (grown, shrunk, moved).")
    failed: tuple[str, ...] = Field(default=(), description="Jobs a device failure stopped at this instant.")
    down: dict[str, tuple[int, ...]] = Field(
        default_factory=dict, description="Device indices per group that are down (failed, not yet repaired)."
    )
    window: str | None = Field(default=None, description="'start' or 'end' when a power window begins or ends.")
    power_w: float = Field(description="Fleet draw until the next event, in watts.")
    power_by_domain: dict[str, float] = Field(default_factory=dict)
    budget_w: float | None = Field(description="Global budget in force (a window's or power.budget_w), in watts.")
    budget_by_domain: dict[str, float] = Field(default_factory=dict)
    solve: str | None = Field(default=None, description="How the decision was made (planner: MILP status).")


class PriorityCounts(_Frozen):
    jobs: int
    with_deadline: int
    deadlines_met: int
    deadlines_missed: int
    finished: int
    never_ran: int
    mean_wait_hours: float | None
    p95_wait_hours: float | None


class CriticalPath(_Frozen):
    jobs: tuple[str, ...]
    hours: float = Field(
        description="When the last job on the path finishes, following only releases and dependencies."
    )


class DeviceUtilisation(_Frozen):
    device: str
    count: int
    busy_device_hours: float
    utilisation: float = Field(description="busy device-hours / (count x horizon_hours).")


class TeamNight(_Frozen):
    """One team's part of the night (docs/guides/fairness.md)."""

    team: str
    share: float = Field(description="The team's share (the queue's teams, summing to 1; equal without them).")
    jobs: int
    device_hours: float = Field(description="Device-hours the team's jobs held over the horizon (restarts included).")
    device_hours_share: float = Field(description="device_hours / all jobs' device-hours (0 when none ran).")
    worst_rho: float | None = Field(
        description="Largest finish-time fairness rho of the team's finished jobs (null: none finished)."
    )
    never_ran: int = Field(description="Jobs of the team that never ran (their rho is unbounded).")


class BoundStatus(StrEnum):
    optimal = "optimal"  # the time-indexed MILP solved to its gap: its optimum and a bound
    bound = "bound"  # a proven lower bound (LP relaxation, or the MILP's dual bound at its time limit)
    skipped = "skipped"  # not computed: see reason (queue above the size limit, no time left, jobs never ran)


class NightBound(_Frozen):
    """How far the night plan is from the best possible night: lower bounds from the time-indexed relaxation
    (optsched.night.bound; docs/guides/night.md explains what it relaxes and why it is a valid bound)."""

    status: BoundStatus
    reason: str | None = Field(default=None, description="Why no bound, or why a weaker one (skipped, time limit).")
    slot_hours: float | None = Field(default=None, description="Length of the model's longest time slot, in hours.")
    slots: int = Field(default=0, description="Time slots of the model (the tail slot after its horizon included).")
    weighted_completion_bound_hours: float | None = Field(
        default=None,
        description="Lower bound on weighted_mean_completion_hours over every timeline that finishes every job.",
    )
    weighted_completion_optimum_hours: float | None = Field(
        default=None,
        description="Optimum of the time-indexed MILP (status optimal; itself a lower bound, within its mip gap).",
    )
    weighted_completion_gap: float | None = Field(
        default=None,
        description="(plan - bound) / plan for weighted mean completion (null: not comparable, see reason).",
    )
    energy_bound_kwh: float | None = Field(
        default=None, description="Lower bound on energy_kwh of any timeline that finishes every job."
    )
    energy_gap: float | None = Field(default=None, description="(plan - bound) / plan for energy_kwh.")
    fairness_bound: float | None = Field(
        default=None,
        description="Upper bound on the fairness by morning of any timeline (fairness objectives only; "
        "optsched.night.fair_bound).",
    )
    fairness_gap: float | None = Field(
        default=None, description="(bound - plan) / bound for the summary's fairness (null: no bound or bound 0)."
    )
    max_rho_bound: float | None = Field(
        default=None, description="Lower bound on the largest rho of any timeline that finishes every job."
    )
    max_rho_gap: float | None = Field(
        default=None, description="(plan - bound) / plan for max_rho (null when some job never ran)."
    )


class NightSummary(_Frozen):
    policy: str
    status: NightStatus
    jobs: int
    makespan_hours: float = Field(description="When the last job finishes (0 if nothing ran).")
    horizon_hours: float = Field(description="max(night hours, makespan): the span energy and utilisation cover.")
    finished_by_end_of_night: int
    finished_jobs_by_end_of_night: tuple[str, ...]
    never_ran: tuple[str, ...] = Field(description="Jobs that did not finish (those in `stopped` too).")
    stopped: tuple[str, ...] = Field(
        default=(), description="Jobs that ran until a device failure stopped them and never finished."
    )
    hard_deadlines_met: int
    hard_deadlines_missed: tuple[str, ...]
    soft_deadlines_missed: tuple[str, ...]
    weighted_mean_completion_hours: float | None = Field(
        description="sum(priority weight x weight x finish) / sum(priority weight x weight) over finished jobs."
    )
    by_priority: dict[str, PriorityCounts]
    critical_path: CriticalPath
    energy_kwh: float = Field(
        description="Fleet energy (caps of busy devices, idle draw of the rest) over the horizon."
    )
    work_finished_by_end_of_night_hours: float = Field(
        default=0.0, description="Reference work-hours of the jobs finished by the end of the night."
    )
    lost_work_hours: float = Field(default=0.0, description="Reference work lost to device failures, all jobs.")
    restarts: int = Field(default=0, description="Restart runs paid, all jobs.")
    peak_power_w: float
    peak_budget_share: float | None = Field(description="max over events of power / global budget in force.")
    peak_power_by_domain: dict[str, float]
    device_utilisation: tuple[DeviceUtilisation, ...]
    events: int
    decisions_at_time_limit: int = Field(
        description="Planner solves that stopped at their time limit (0 for baselines)."
    )
    max_rho: float | None = Field(
        default=None,
        description="Finish-time fairness: the largest rho_j = (finish - release) / (work_j / S_j^equal) over "
        "finished jobs, S_j^equal the job's speedup on 1/n of every eligible device group (n jobs in the queue).",
    )
    teams: tuple[TeamNight, ...] = Field(default=(), description="Per team, when any job names a team.")
    bound: NightBound | None = Field(
        default=None,
        description="Gap to the time-indexed lower bound (plan_night's chosen timeline; null for baselines).",
    )
    fairness: float | None = Field(
        default=None,
        description="Under a fairness objective, its value by morning on each job's share x_j of its work done by "
        "the end of the night: max_min_speedup min_j x_j / weight_j, team_max_min min over teams of their summed "
        "x_j / share (null under other objectives).",
    )


class NightPlan(_Frozen):
    queue: str = Field(description="Name of the planned queue (workload).")
    policy: str = Field(description="'planner', or a baseline: 'fifo', 'edf', 'easy', 'conservative'.")
    chosen: str | None = Field(
        default=None,
        description="The planner's candidate policy whose timeline this is (milp, milp-classic, dispatch-...).",
    )
    start: datetime
    hours: float = Field(description="Length of the night in hours.")
    preempt: bool = False
    restart_hours: float = Field(
        default=0.0, description="Restart cost of the jobs whose queue sets none (plan_night's argument), in hours."
    )
    on_failure: str = Field(
        default="replan", description="'replan': a job a failure stops is planned again at once; 'wait': it waits "
        "for the repair and resumes on the same devices."
    )
    power: NightPower = Field(description="Echo of the queue's budgets: budget_w, domains and windows.")
    failures: tuple[DeviceFailure, ...] = Field(default=(), description="Echo of the queue's device failures.")
    status: NightStatus
    jobs: tuple[JobTimeline, ...]
    events: tuple[NightEvent, ...]
    summary: NightSummary
    warnings: tuple[str, ...] = ()
    budget_cut: tuple[str, ...] = Field(
        default=(),
        description="The planner's candidates its planning budget (budget_s) stopped or left unrun; where not "
        "empty, more time may find a better night.",
    )

    @property
    def ok(self) -> bool:
        return self.status == NightStatus.met

    def timeline_document(self) -> dict[str, Any]:
        """timeline.json: everything but the summary (which goes to summary.json)."""
        return self.model_dump(mode="json", by_alias=True, exclude={"summary"})
