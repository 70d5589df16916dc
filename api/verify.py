"""/v1/verify: check a plan (for instance one edited by hand) against its workload."""

from __future__ import annotations

import json
from typing import Any

from flask import request
from flask_openapi3 import APIBlueprint, Tag
from pydantic import ValidationError

from api.costs import check_at_most, check_workload
from api.errors import problem_doc
from api.guards import UNAUTHORIZED, V1_SECURITY, require_json_body
from api.schemas import VerifyRequest, VerifyResult
from optsched.schema.errors import FieldError, InvalidWorkload
from optsched.schema.plan import Plan
from optsched.schema.workload import field_errors
from optsched.verify.placement import verify

bp = APIBlueprint(
    "verify",
    __name__,
    url_prefix="/v1",
    abp_tags=[Tag(name="verify", description="Check plans against their workloads.")],
    abp_security=V1_SECURITY,
)
bp.before_request(require_json_body)


@bp.post(
    "/verify",
    operation_id="verifyPlan",
    summary="Verify a plan against its workload",
    description="Every rule the plan breaks (capacity, eligibility, power budgets, deadlines, reported figures), "
    "recomputed from the placements alone by the independent verifier; an empty list when the plan is valid.",
    responses={
        200: VerifyResult,
        400: problem_doc("The body is not valid JSON."),
        401: problem_doc(UNAUTHORIZED),
        413: problem_doc("The body is larger than OPTSCHED_MAX_BODY_MB."),
        415: problem_doc("The body is not `application/json`."),
        422: problem_doc("The workload or the plan does not parse; `errors` lists every offending field."),
    },
)
def verify_plan(body: VerifyRequest):
    """The verifier's violations (the plan read strictly: JSON's own types only, as for the workload)."""
    check_workload(body.workload, path="workload")
    check_at_most(len(body.plan.placements), "MAX_JOBS", "plan.placements", "placements")
    plan = _strict_plan(request.get_json()["plan"])
    return VerifyResult(violations=verify(body.workload, plan)).model_dump(mode="json")


def _strict_plan(document: Any) -> Plan:
    """The plan validated in pydantic's strict JSON mode: no "12" for a number, no true for a count."""
    try:
        return Plan.model_validate_json(json.dumps(document), strict=True)
    except ValidationError as exc:
        errors = [FieldError(f"plan.{e.path}" if e.path else "plan", e.message) for e in field_errors(exc)]
        raise InvalidWorkload(errors) from None
