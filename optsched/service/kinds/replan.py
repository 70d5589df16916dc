"""Re-plans: `optsched.replan(workload, plan, change)`, a finished plan re-planned after a change."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from optsched.infra.queue import SolveTask
from optsched.infra.store import PlanRecord
from optsched.replan import Change, InvalidChange, Replan, check_change, check_growth, replan
from optsched.schema.errors import FieldError
from optsched.schema.plan import Status
from optsched.schema.workload import Workload
from optsched.service.kinds.base import (
    Conflict,
    Document,
    KindSpec,
    Submission,
    Texts,
    check_solve_budget,
    time_limit_s,
)
from optsched.service.settings import limits_of, load_settings


def solve(task: SolveTask) -> Replan:
    """The re-plan, held again to the server's size limits: the worker checks the changed workload it derives
    before it builds anything, whatever was stored (a row written by an older server, or edited)."""
    document = task.workload
    return replan(
        document["workload"], document["plan"], document["change"], threads=task.threads,
        limits=limits_of(load_settings()),
    )


def verdict(result: Replan) -> str:
    """The new plan's status."""
    return result.plan.status.value


def budget_s(document: Document, params: Document) -> float:
    """The re-plan solves the changed workload once (its own time limit) and may diagnose it."""
    return 2 * time_limit_s(document.get("workload") if isinstance(document, dict) else None)


def precount(raw: Any, settings: Mapping[str, Any]) -> None:
    """Every added job is a job of the changed workload: more added jobs than OPTSCHED_MAX_JOBS are refused at
    `add_jobs` by counting them, before the change is parsed (prepare counts kept + added exactly)."""
    added = raw.get("add_jobs") if isinstance(raw, dict) else None
    if isinstance(added, list) and len(added) > settings["MAX_JOBS"]:
        raise InvalidChange([FieldError("add_jobs", (
            f"the changed workload is too large: {len(added):,} added jobs, above the limit of "
            f"{settings['MAX_JOBS']:,} (OPTSCHED_MAX_JOBS)"
        ))])


def prepare(body: Change, raw: Any, settings: Mapping[str, Any], parent: PlanRecord | None) -> Submission:
    """The parent must be final with a plan; the changed workload is held to the limits a plan's workload is.

    First by counting (jobs kept + added, x the fleet's power levels, against OPTSCHED_MAX_JOBS and
    OPTSCHED_MAX_VARIABLES: 40,000 added jobs are refused before anything is built), then every check the worker's
    re-plan makes before it solves (check_change: the change against the workload and the plan, a pin of a job
    the plan does not run at `pin[i]`, repairs beyond a group's original count, the changed workload against every
    size limit, OPTSCHED_MAX_DEVICES among them), then its worst-case solve time (OPTSCHED_MAX_SOLVE_S); each a
    422 naming the field of the change."""
    if parent is None:
        raise Conflict("a re-plan starts from a plan; POST it to /v1/plans/{id}/replans")
    if parent.plan is None or parent.workload is None or not parent.status.final:
        raise Conflict(f"plan {parent.id!r} is {parent.outcome} and has no plan to re-plan from")
    limits = limits_of(settings)
    before = Workload.load(parent.workload)
    check_growth(before, body, limits)
    # The raw document, not `body`: Change.load also checks what the model alone cannot (ids listed twice).
    after = check_change(before, parent.plan, raw, limits=limits)
    document = {"workload": parent.workload, "plan": parent.plan, "change": raw}
    # The budget reads the changed workload's time limit only (time_limit_s): no need to dump every job.
    budget = {"workload": {"options": {"time_limit_s": after.options.time_limit_s}}}
    check_solve_budget(SPEC, budget, {}, settings["MAX_SOLVE_S"], path="workload")
    return Submission(document, {"parent": parent.id})


SPEC = KindSpec(
    name="replan",
    noun="re-plan",
    collection="replans",
    camel="Replan",
    id_param="replan_id",
    request=Change,
    result=Replan,
    result_field="replan",
    solve=solve,
    verdict=verdict,
    budget_s=budget_s,
    verdicts=tuple(s.value for s in Status),
    prepare=prepare,
    precount=precount,
    page="replan.html",
    parent="plan",
    param_fields={"parent": ("parent", "The id of the plan this re-plans.")},
    texts=Texts(
        tag="replans",
        tag_description="Re-plan after failures and changes (optsched replan).",
        submit_summary="Re-plan a finished plan after a change",
        submit_description="Body: a change document (`device_failures`, `device_repairs`, `budget_w`, `domains`, "
        "`add_jobs`, `remove_jobs`, `pin`; see the README). Validated against the plan's workload (`422` with paths), "
        "stored and queued: `202` with `Location: /v1/replans/{id}`. The new plan maximises the objective minus the "
        "cost of moving running jobs, and lists what changed per job. With `Idempotency-Key`, a retried request "
        "returns the first re-plan (`Idempotent-Replayed: true`).",
        invalid="The change fails validation",
        get_description="The re-plan resource: its parent, status, timestamps and, once solved, the new plan (verify "
        "it against `replan.workload`, the changed workload) with the changes job by job and the restart hours.",
        delete_description="A queued or solving re-plan is cancelled: 200 with the resource. A finished one is "
        "deleted: 204.",
        resource_description="A re-plan of a finished plan after a change: its status, timestamps and, once "
        "solved, the new plan with\nthe changes job by job (kept, recapped, resized, moved, started, stopped, and "
        "why).",
        status_description="queued and solving are transient; the others are the new plan's status.",
        result_description="The new plan and its changes; null until solved.",
        parent_description="Id of the plan to re-plan (its parent).",
        submit_problems={
            404: "No plan with this id.",
            409: "The plan has no result yet (queued or solving) or ended without one.",
        },
    ),
)
