"""Request and response models at the HTTP edge; the documents inside them are optsched's own models."""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from optsched.explain.frontier import Frontier
from optsched.night import NightPlan
from optsched.schema.night import NightQueue
from optsched.schema.plan import Plan
from optsched.infra.store import PlanRecord, ResourceKind, states_of
from optsched.schema.workload import Workload


def _state_enum(name: str, kind: ResourceKind) -> type[StrEnum]:
    """The states a resource of `kind` can be in, as its own enum (so each resource documents its own)."""
    return StrEnum(name, {s.name: s.value for s in states_of(kind)}, module=__name__)


PlanStatus = _state_enum("PlanStatus", ResourceKind.plan)
NightPlanStatus = _state_enum("NightPlanStatus", ResourceKind.night)
FrontierStatus = _state_enum("FrontierStatus", ResourceKind.frontier)
# Longest night a request may plan, in hours (a week).
MAX_NIGHT_HOURS = 168.0
MAX_BUDGETS = 100


class PlanPath(BaseModel):
    plan_id: str = Field(description="Plan id, as returned in `id` and `Location`.")


class NightPlanPath(BaseModel):
    night_plan_id: str = Field(description="Night plan id, as returned in `id` and `Location`.")


class FrontierPath(BaseModel):
    frontier_id: str = Field(description="Frontier id, as returned in `id` and `Location`.")


class SubmitHeaders(BaseModel):
    prefer: str | None = Field(
        default=None, alias="Prefer", description="`respond-async` answers 202 at once instead of waiting."
    )
    idempotency_key: str | None = Field(
        default=None,
        alias="Idempotency-Key",
        min_length=1,
        max_length=255,
        description="A retried POST with the same key returns the same plan instead of solving twice.",
    )


class AsyncSubmitHeaders(BaseModel):
    idempotency_key: str | None = Field(
        default=None,
        alias="Idempotency-Key",
        min_length=1,
        max_length=255,
        description="A retried POST with the same key returns the same resource instead of solving twice.",
    )


class ListQuery(BaseModel):
    limit: int = Field(default=20, ge=1, le=100, description="Plans per page.")
    cursor: str | None = Field(default=None, max_length=500, description="`next_cursor` of the previous page.")
    status: PlanStatus | None = Field(default=None, description="Only plans in this status.")


class _Timestamps(BaseModel):
    id: str
    submitted_at: datetime
    started_at: datetime | None = Field(description="When a worker started the (last) solve.")
    finished_at: datetime | None
    error: str | None = Field(default=None, description="Why the solve failed or was stopped, when it was.")

    @staticmethod
    def fields_of(record: PlanRecord) -> dict[str, Any]:
        return {
            "id": record.id,
            "status": record.status.value,
            "submitted_at": record.submitted_at,
            "started_at": record.started_at,
            "finished_at": record.finished_at,
            "error": record.error,
        }


class PlanSummary(_Timestamps):
    status: PlanStatus = Field(description="queued and solving are transient; the others are final.")

    @classmethod
    def of(cls, record: PlanRecord) -> PlanSummary:
        return cls(**cls.fields_of(record))


class PlanResource(PlanSummary):
    """A submitted plan: its status, the scheduling timestamps, and the plan once there is one."""

    plan: Plan | None = Field(default=None, description="The plan; null until the solve ends (and if it failed).")

    @classmethod
    def of(cls, record: PlanRecord) -> PlanResource:
        plan = Plan.model_validate(record.plan) if record.plan is not None else None
        return cls(**cls.fields_of(record), plan=plan)


class PlanList(BaseModel):
    items: list[PlanSummary] = Field(description="Newest first; fetch one by id for its plan.")
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last page.")


class NightPlanRequest(BaseModel):
    """`optsched.plan_night(queue, start=..., hours=..., preempt=..., restart_hours=...)` as a request body."""

    model_config = ConfigDict(extra="forbid")

    queue: NightQueue = Field(
        description="The night's queue: a workload with release_hours, after, power.windows, failures, defaults."
    )
    start: datetime = Field(description="When the night starts, ISO 8601 (e.g. 2026-12-01T22:00).")
    hours: float = Field(gt=0, le=MAX_NIGHT_HOURS, description="Length of the night in hours.")
    preempt: bool = Field(default=False, description="Let due jobs displace lower-priority running jobs.")
    restart_hours: float = Field(
        default=0.1, ge=0, le=MAX_NIGHT_HOURS, description="Restart cost of a preempted job, in hours."
    )

    @model_validator(mode="after")
    def representable_end(self) -> NightPlanRequest:
        try:
            self.start + timedelta(hours=self.hours)
        except OverflowError:
            raise ValueError("start + hours is past the last date-time this service can represent") from None
        return self

    def params(self) -> dict[str, Any]:
        """The keyword arguments of plan_night (JSON-ready, as stored with the resource)."""
        return self.model_dump(mode="json", include={"start", "hours", "preempt", "restart_hours"})


class FrontierRequest(BaseModel):
    """`optsched.frontier(workload, budgets=...)` as a request body."""

    model_config = ConfigDict(extra="forbid")

    workload: Workload
    budgets: list[Annotated[float, Field(gt=0, allow_inf_nan=False)]] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_BUDGETS,
        description="Global budgets to plan, in watts; left out, the sweep finds its own (at least 12 points, "
        "denser where the curve bends).",
    )

    def params(self) -> dict[str, Any]:
        return {"budgets": self.budgets}


class NightPlanResource(_Timestamps):
    """A submitted night plan: its status, the scheduling timestamps and, once there is one, the timeline."""

    status: NightPlanStatus = Field(
        description="queued and solving are transient; met/missed are the night plan's own verdict."
    )
    night_plan: NightPlan | None = Field(
        default=None, description="The timeline and its summary (timeline.json + summary.json); null until done."
    )

    @classmethod
    def of(cls, record: PlanRecord) -> NightPlanResource:
        night = NightPlan.model_validate(record.result) if record.result is not None else None
        return cls(**cls.fields_of(record), night_plan=night)


class FrontierResource(_Timestamps):
    """A submitted frontier: its status, the scheduling timestamps and, once there is one, the frontier."""

    status: FrontierStatus = Field(
        description="queued and solving are transient; done: a curve; infeasible: no curve (see frontier.reason)."
    )
    frontier: Frontier | None = Field(default=None, description="The frontier; null until the sweep ends.")

    @classmethod
    def of(cls, record: PlanRecord) -> FrontierResource:
        result = Frontier.model_validate(record.result) if record.result is not None else None
        return cls(**cls.fields_of(record), frontier=result)


class VerifyRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    workload: Workload
    plan: Plan


class VerifyResult(BaseModel):
    violations: list[str] = Field(description="Every rule the plan breaks; empty when the plan is valid.")


class Health(BaseModel):
    status: str
    checks: dict[str, str] = Field(default_factory=dict)
