"""The night plan: a timeline of segments per job, power per event and a summary (immutable, JSON-ready).

Times are given twice: as hours after the night starts (exact, what the verifier checks) and as ISO 8601
timestamps (start + hours, to the second, for people and spreadsheets).
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from optsched.schema.workload import Power


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
    restart: bool = Field(default=False, description="Restarting after a preemption: devices held, no progress.")
    speedup: float = Field(description="Heterogeneous Amdahl speedup S over the segment (0 while restarting).")
    work_hours: float = Field(description="Reference work done in the segment: S x (to_hours - from_hours).")
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


class NightSummary(_Frozen):
    policy: str
    status: NightStatus
    jobs: int
    makespan_hours: float = Field(description="When the last job finishes (0 if nothing ran).")
    horizon_hours: float = Field(description="max(night hours, makespan): the span energy and utilisation cover.")
    finished_by_end_of_night: int
    finished_jobs_by_end_of_night: tuple[str, ...]
    never_ran: tuple[str, ...]
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
    peak_power_w: float
    peak_budget_share: float | None = Field(description="max over events of power / global budget in force.")
    peak_power_by_domain: dict[str, float]
    device_utilisation: tuple[DeviceUtilisation, ...]
    events: int
    decisions_at_time_limit: int = Field(
        description="Planner solves that stopped at their time limit (0 for baselines)."
    )


class NightPlan(_Frozen):
    queue: str = Field(description="Name of the planned queue (workload).")
    policy: str = Field(description="'planner' (event-driven MILP), 'fifo' or 'edf'.")
    start: datetime
    hours: float = Field(description="Length of the night in hours.")
    preempt: bool = False
    restart_hours: float = 0.0
    power: Power = Field(description="Echo of the queue's budgets: budget_w, domains and windows.")
    status: NightStatus
    jobs: tuple[JobTimeline, ...]
    events: tuple[NightEvent, ...]
    summary: NightSummary
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.status == NightStatus.met

    def timeline_document(self) -> dict:
        """timeline.json: everything but the summary (which goes to summary.json)."""
        return self.model_dump(mode="json", by_alias=True, exclude={"summary"})
