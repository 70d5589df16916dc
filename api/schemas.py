"""Request and response models at the HTTP edge; the documents inside them are optsched's own models."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema, model_validator

from optsched.explain.frontier import Frontier
from optsched.infra.store import CURSOR_PATTERN, PlanRecord, ResourceKind, states_of
from optsched.night import NightPlan
from optsched.queueing import Method, StudyResult
from optsched.replan import Replan
from optsched.schema.night import NightQueue
from optsched.schema.plan import Plan
from optsched.schema.workload import Workload


def _state_enum(name: str, kind: ResourceKind) -> type[StrEnum]:
    """The states a resource of `kind` can be in, as its own enum (so each resource documents its own)."""
    return StrEnum(name, {s.name: s.value for s in states_of(kind)}, module=__name__)


PlanStatus = _state_enum("PlanStatus", ResourceKind.plan)
NightPlanStatus = _state_enum("NightPlanStatus", ResourceKind.night)
FrontierStatus = _state_enum("FrontierStatus", ResourceKind.frontier)
QueueingStudyStatus = _state_enum("QueueingStudyStatus", ResourceKind.queueing)
ReplanStatus = _state_enum("ReplanStatus", ResourceKind.replan)
# Bounds every server accepts; a server's own, lower limits (OPTSCHED_MAX_NIGHT_HOURS, OPTSCHED_MAX_BUDGETS) are
# checked in the views and published in its OpenAPI document.
MAX_NIGHT_HOURS = 8_760.0
MAX_BUDGETS = 1_000
# When a night starts: a local date and time, to the minute or the second, with an optional UTC offset
# (2026-12-01T22:00, 2026-12-01T22:00:00+01:00), in years 1970-2999. Night plans return it as given, with seconds.
NIGHT_START_PATTERN = (
    r"^(19[7-9][0-9]|2[0-9]{3})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]"
    r"(:[0-5][0-9])?(Z|[+-](0[0-9]|1[0-3]):[0-5][0-9])?$"
)
NIGHT_START_SCHEMA = {
    "type": "string",
    "pattern": NIGHT_START_PATTERN,
    "description": "When the night starts: local date and time (YYYY-MM-DDTHH:MM[:SS]), with an optional UTC offset "
    "(Z or +HH:MM); years 1970-2999.",
    "examples": ["2026-12-01T22:00"],
}
_NIGHT_START = re.compile(NIGHT_START_PATTERN)
# A query parameter that is a count: decimal digits only ("1.0", "1e1", " 1" are not counts).
_DIGITS = re.compile(r"[0-9]{1,9}")


def _night_start(value: Any) -> Any:
    if not isinstance(value, str) or _NIGHT_START.fullmatch(value) is None:
        raise ValueError(
            "must be a date and time as YYYY-MM-DDTHH:MM[:SS] with an optional offset (Z or +HH:MM), in years "
            "1970-2999, e.g. 2026-12-01T22:00"
        )
    return value


def _count(value: Any) -> Any:
    if isinstance(value, str) and _DIGITS.fullmatch(value) is None:
        raise ValueError("must be a whole number written with digits only")
    return int(value) if isinstance(value, str) else value


NightStart = Annotated[datetime, BeforeValidator(_night_start), WithJsonSchema(NIGHT_START_SCHEMA)]
QueryCount = Annotated[int, BeforeValidator(_count), Field(strict=True)]
StrictFloat = Annotated[float, Field(strict=True)]
StrictBool = Annotated[bool, Field(strict=True)]


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
    limit: QueryCount = Field(default=20, ge=1, le=100, description="Plans per page.")
    cursor: str | None = Field(
        default=None, pattern=CURSOR_PATTERN, description="`next_cursor` of the previous page."
    )
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

    plan: Plan | None = Field(default=None, description="The plan. While solving: the best plan so far (status `time_limit`, with its bound and gap), or null before the first; null if it failed.")

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
    start: NightStart
    hours: StrictFloat = Field(gt=0, le=MAX_NIGHT_HOURS, description="Length of the night in hours.")
    preempt: StrictBool = Field(default=False, description="Let due jobs displace lower-priority running jobs.")
    restart_hours: StrictFloat = Field(
        default=0.1,
        ge=0,
        le=MAX_NIGHT_HOURS,
        description="Restart cost in hours of jobs whose queue sets none (after a preemption, a move, a failure).",
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
    budgets: list[Annotated[float, Field(gt=0, allow_inf_nan=False, strict=True)]] | None = Field(
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


class QueueingStudyPath(BaseModel):
    study_id: str = Field(description="Queueing study id, as returned in `id` and `Location`.")


class QueueingStudyRequest(BaseModel):
    """`optsched.queueing.analyze(study, method=..., seed=...)` as a request body (the study format is in the README)."""

    model_config = ConfigDict(extra="forbid")

    study: dict[str, Any] = Field(description="The study document (validated in full, errors name `study.<path>`).")
    method: Method = Field(default=Method.analytic, description="analytic (closed forms / approximation) or simulation.")
    seed: int = Field(default=0, ge=0, le=2**31 - 1, strict=True, description="Seed of the simulation's random streams.")

    def params(self) -> dict[str, Any]:
        return {"method": self.method.value, "seed": self.seed}


class QueueingStudyResource(_Timestamps):
    """A submitted queueing study: its status, the scheduling timestamps and, once done, the result."""

    status: QueueingStudyStatus = Field(
        description="queued and solving are transient; done: stable and meets its targets; infeasible: unstable or "
        "no caps meet the targets (result.reason says why)."
    )
    result: StudyResult | None = Field(default=None, description="The study's result; null until it is analysed.")

    @classmethod
    def of(cls, record: PlanRecord) -> QueueingStudyResource:
        result = StudyResult.model_validate(record.result) if record.result is not None else None
        return cls(**cls.fields_of(record), result=result)


class ReplanPath(BaseModel):
    plan_id: str = Field(description="Id of the plan to re-plan (its parent).")


class ReplanResourcePath(BaseModel):
    replan_id: str = Field(description="Re-plan id, as returned in `id` and `Location`.")


class ReplanResource(_Timestamps):
    """A re-plan of a finished plan after a change: its status, timestamps and, once solved, the new plan with
    the changes job by job (kept, recapped, resized, moved, started, stopped, and why)."""

    parent: str = Field(description="The id of the plan this re-plans.")
    status: ReplanStatus = Field(description="queued and solving are transient; the others are the new plan's status.")
    replan: Replan | None = Field(default=None, description="The new plan and its changes; null until solved.")

    @classmethod
    def of(cls, record: PlanRecord) -> ReplanResource:
        result = Replan.model_validate(record.result) if record.result is not None else None
        return cls(**cls.fields_of(record), parent=(record.params or {}).get("parent", ""), replan=result)


class VerifyRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    workload: Workload
    plan: Plan


class VerifyResult(BaseModel):
    violations: list[str] = Field(description="Every rule the plan breaks; empty when the plan is valid.")


class Health(BaseModel):
    status: str
    checks: dict[str, str] = Field(default_factory=dict)
