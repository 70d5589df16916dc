"""/v1/verify: check a plan (for instance one edited by hand) against its workload."""

from __future__ import annotations

from flask_openapi3 import APIBlueprint, Tag

from api.errors import problem_doc
from api.guards import V1_SECURITY, require_json_body, require_token
from api.schemas import VerifyRequest, VerifyResult
from optsched.verify.placement import verify

bp = APIBlueprint(
    "verify",
    __name__,
    url_prefix="/v1",
    abp_tags=[Tag(name="verify", description="Check plans against their workloads.")],
    abp_security=V1_SECURITY,
)
bp.before_request(require_token)
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
        401: problem_doc("Missing or wrong bearer token (only when OPTSCHED_API_TOKEN is set)."),
        413: problem_doc("The body is larger than OPTSCHED_MAX_BODY_MB."),
        415: problem_doc("The body is not `application/json`."),
        422: problem_doc("The workload or the plan does not parse; `errors` lists every offending field."),
    },
)
def verify_plan(body: VerifyRequest):
    """The verifier's violations."""
    return VerifyResult(violations=verify(body.workload, body.plan)).model_dump(mode="json")
