"""Request and response models at the HTTP edge; the documents inside them are optsched's own models."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from optsched.plan import Plan
from optsched.store import PlanRecord, PlanState
from optsched.workload import Workload


class PlanPath(BaseModel):
    plan_id: str = Field(description="Plan id, as returned in `id` and `Location`.")


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


class ListQuery(BaseModel):
    limit: int = Field(default=20, ge=1, le=100, description="Plans per page.")
    cursor: str | None = Field(default=None, max_length=500, description="`next_cursor` of the previous page.")
    status: PlanState | None = Field(default=None, description="Only plans in this status.")


class PlanSummary(BaseModel):
    id: str
    status: PlanState = Field(description="queued and solving are transient; the others are final.")
    submitted_at: datetime
    started_at: datetime | None = Field(description="When a worker started the (last) solve.")
    finished_at: datetime | None
    error: str | None = Field(default=None, description="Why a plan failed or was stopped, when it was.")

    @classmethod
    def of(cls, record: PlanRecord) -> PlanSummary:
        return cls(
            id=record.id,
            status=record.status,
            submitted_at=record.submitted_at,
            started_at=record.started_at,
            finished_at=record.finished_at,
            error=record.error,
        )


class PlanResource(PlanSummary):
    """A submitted plan: its status, the scheduling timestamps, and the plan once there is one."""

    plan: Plan | None = Field(default=None, description="The plan; null until the solve ends (and if it failed).")

    @classmethod
    def of(cls, record: PlanRecord) -> PlanResource:
        summary = PlanSummary.of(record)
        plan = Plan.model_validate(record.plan) if record.plan is not None else None
        return cls(**summary.model_dump(), plan=plan)


class PlanList(BaseModel):
    items: list[PlanSummary] = Field(description="Newest first; fetch one by id for its plan.")
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last page.")


class VerifyRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    workload: Workload
    plan: Plan


class VerifyResult(BaseModel):
    violations: list[str] = Field(description="Every rule the plan breaks; empty when the plan is valid.")


class Health(BaseModel):
    status: str
    checks: dict[str, str] = Field(default_factory=dict)
