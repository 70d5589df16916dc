"""Re-plans: `optsched.replan(workload, plan, change)`, a finished plan re-planned after a change."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from optsched.infra.queue import SolveTask
from optsched.infra.store import PlanRecord
from optsched.replan import Change, Replan, apply_change, replan
from optsched.schema.plan import Status
from optsched.schema.workload import Workload
from optsched.service.kinds.base import Conflict, Document, KindSpec, Submission, Texts, time_limit_s


def solve(task: SolveTask) -> Replan:
    document = task.workload
    return replan(document["workload"], document["plan"], document["change"], threads=task.threads)


def verdict(result: Replan) -> str:
    """The new plan's status."""
    return result.plan.status.value


def budget_s(document: Document, params: Document) -> float:
    """The re-plan solves the changed workload once (its own time limit) and may diagnose it."""
    return 2 * time_limit_s(document.get("workload") if isinstance(document, dict) else None)


def prepare(body: Change, raw: Any, settings: Mapping[str, Any], parent: PlanRecord | None) -> Submission:
    """The parent must be final with a plan; the change is checked against its workload (InvalidChange: 422)."""
    if parent is None:
        raise Conflict("a re-plan starts from a plan; POST it to /v1/plans/{id}/replans")
    if parent.plan is None or parent.workload is None or not parent.status.final:
        raise Conflict(f"plan {parent.id!r} is {parent.outcome} and has no plan to re-plan from")
    # The raw document, not `body`: apply_change also checks what the model alone cannot (ids listed twice).
    apply_change(Workload.load(parent.workload), raw)
    return Submission({"workload": parent.workload, "plan": parent.plan, "change": raw}, {"parent": parent.id})


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
