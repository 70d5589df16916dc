"""Night plans: `optsched.plan_night(queue, start=..., hours=..., preempt=..., restart_hours=..., budget_s=...)`, a
night's queue as a timeline."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema, model_validator

from optsched.charts import gantt_png, power_png
from optsched.infra.queue import SolveTask
from optsched.infra.store import PlanRecord
from optsched.night import NightPlan, plan_night, validate_night
from optsched.night.bound import BOUND_TIME_LIMIT_S
from optsched.night.milp import NIGHT_TIME_LIMIT_S
from optsched.night.planner import (
    EFFICIENT_MAX_JOBS,
    LARGE_NIGHT_BUDGET_S,
    MAX_BUDGET_S,
    NIGHT_BUDGET_S,
    night_budget_s,
)
from optsched.schema.errors import InvalidWorkload
from optsched.schema.limits import check_size
from optsched.schema.night import NightQueue, NightStatus
from optsched.service.kinds.base import (
    Chart,
    Document,
    KindSpec,
    PublishedLimit,
    Submission,
    Texts,
    check_at_most,
    check_solve_budget,
    time_limit_s,
    under,
)
from optsched.service.settings import limits_of

# The longest night any server accepts; a server's own, lower OPTSCHED_MAX_NIGHT_HOURS is checked in `prepare`.
MAX_NIGHT_HOURS = 8_760.0
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
# Request fields that are plan_night's own arguments; every other path is inside the queue.
ARGUMENTS = ("start", "hours", "preempt", "restart_hours", "budget_s")


def _night_start(value: Any) -> Any:
    if not isinstance(value, str) or _NIGHT_START.fullmatch(value) is None:
        raise ValueError(
            "must be a date and time as YYYY-MM-DDTHH:MM[:SS] with an optional offset (Z or +HH:MM), in years "
            "1970-2999, e.g. 2026-12-01T22:00"
        )
    return value


NightStart = Annotated[datetime, BeforeValidator(_night_start), WithJsonSchema(NIGHT_START_SCHEMA)]
StrictFloat = Annotated[float, Field(strict=True)]
StrictBool = Annotated[bool, Field(strict=True)]


class NightPlanRequest(BaseModel):
    """`optsched.plan_night(queue, start=..., hours=..., preempt=..., restart_hours=..., budget_s=...)` as a request
    body."""

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
    budget_s: StrictFloat | None = Field(
        default=None,
        gt=0,
        le=MAX_BUDGET_S,
        description="Seconds the planner may spend, its bound included (plan_night's budget_s; omitted: "
        f"{NIGHT_BUDGET_S:.0f} s up to {EFFICIENT_MAX_JOBS} jobs, {LARGE_NIGHT_BUDGET_S:.0f} s beyond). What it "
        "stops or leaves unrun is named in the night plan's budget_cut.",
    )

    @model_validator(mode="after")
    def representable_end(self) -> NightPlanRequest:
        try:
            self.start + timedelta(hours=self.hours)
        except OverflowError:
            raise ValueError("start + hours is past the last date-time this service can represent") from None
        return self

    def params(self) -> Document:
        """The keyword arguments of plan_night (JSON-ready, as stored with the resource)."""
        return self.model_dump(mode="json", include={*ARGUMENTS}, exclude_none=True)


def solve(task: SolveTask) -> NightPlan:
    return plan_night(task.workload, **task.params)


def verdict(result: NightPlan) -> str:
    """`met`: every hard deadline met; `missed`: a complete timeline with misses."""
    return result.status.value


def budget_s(workload: Document, params: Document) -> float:
    """The planning budget (the request's budget_s, else plan_night's default for the queue's size), one event
    solve's time limit (the solve under way when it ends, and the first timeline, which always runs whole) and the
    time limit of the summary's bound."""
    options = workload.get("options")
    given = isinstance(options, dict) and "time_limit_s" in options
    per_event = time_limit_s(workload) if given else NIGHT_TIME_LIMIT_S
    planning = params.get("budget_s") or night_budget_s(len(workload.get("jobs") or []))
    return float(planning + per_event + BOUND_TIME_LIMIT_S)


def prepare(body: NightPlanRequest, raw: Any, settings: Mapping[str, Any], parent: PlanRecord | None) -> Submission:
    """Size and hours within this server's limits, then plan_night's own checks (budgets against idle draw too)."""
    check_size(body.queue, limits_of(settings), path="queue")
    check_at_most(body.hours, settings, "MAX_NIGHT_HOURS", "hours", "hours")
    queue = raw["queue"]
    check_solve_budget(SPEC, queue, body.params(), settings["MAX_SOLVE_S"], path="queue", field="budget_s")
    try:
        validate_night(queue, start=body.start, hours=body.hours, restart_hours=body.restart_hours)
    except InvalidWorkload as exc:
        raise InvalidWorkload(under("queue", exc.errors, keep=ARGUMENTS)) from None
    return Submission(queue, body.params())


SPEC = KindSpec(
    name="night",
    noun="night plan",
    collection="night-plans",
    camel="NightPlan",
    id_param="night_plan_id",
    request=NightPlanRequest,
    result=NightPlan,
    result_field="night_plan",
    solve=solve,
    verdict=verdict,
    budget_s=budget_s,
    verdicts=tuple(s.value for s in NightStatus),
    prepare=prepare,
    page="night.html",
    charts=(
        Chart(
            file="gantt.png",
            draw=gantt_png,
            operation="Gantt",
            summary="The night plan's Gantt chart",
            description="One row per device, bars coloured by job, deadline markers (the CLI's gantt.png). 404 if "
            "the night plan is unknown; 409 while it is queued or solving, or when it ended without a timeline or is "
            "too large to draw.",
            what="The Gantt chart.",
        ),
        Chart(
            file="power.png",
            draw=power_png,
            operation="Power",
            summary="The night plan's power over the night",
            description="Fleet and per-domain draw against the budgets in force (the CLI's power.png); status codes "
            "as for gantt.png.",
            what="Power over the night.",
        ),
    ),
    limits=(
        PublishedLimit("NightPlanRequest", "hours", "maximum", "MAX_NIGHT_HOURS"),
        PublishedLimit("NightPlanRequest", "restart_hours", "maximum", "MAX_NIGHT_HOURS"),
    ),
    texts=Texts(
        tag="night-plans",
        tag_description="Plan a night's queue as a timeline (optsched night).",
        submit_summary="Submit a night's queue for planning",
        submit_description="Validates and stores the queue with start, hours, preempt, restart_hours and budget_s (the "
        "arguments of `optsched.plan_night` and `optsched night`), queues it and answers 202 at once; poll `Location` "
        "until `status` is final (`met`: every hard deadline met, `missed`: a complete timeline with misses). With "
        "`Idempotency-Key`, a retried request returns the first night plan (`Idempotent-Replayed: true`).",
        invalid="The queue or an argument fails validation",
        get_description="The night plan resource: status, timestamps and, once done, the timeline with its summary.",
        delete_description="A queued or solving night plan is cancelled (its solve is stopped): 200 with the "
        "resource, status `cancelled`. A finished one is deleted: 204.",
        resource_description="A submitted night plan: its status, the scheduling timestamps and, once there is "
        "one, the timeline.",
        status_description="queued and solving are transient; met/missed are the night plan's own verdict.",
        result_description="The timeline and its summary (timeline.json + summary.json); null until done.",
    ),
)
