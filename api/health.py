"""/healthz (the process answers) and /readyz (the store answers, HiGHS loads, solves are being taken).

A failed readiness check names what fails: the database, Redis (the solve queue), HiGHS or the dispatcher.
"""

from __future__ import annotations

from flask import current_app
from flask_openapi3 import APIBlueprint, Tag

from api.errors import OUTAGE_RETRY_AFTER_S, ApiProblem, problem_doc
from api.schemas import Health
from api.services import services

bp = APIBlueprint("health", __name__, abp_tags=[Tag(name="health", description="Liveness and readiness probes.")])


@bp.get(
    "/healthz",
    operation_id="healthz",
    summary="Liveness",
    description="200 while the process serves requests.",
    responses={200: Health},
)
def healthz():
    """200 while the process serves requests."""
    return Health(status="ok").model_dump()


@bp.get(
    "/readyz",
    operation_id="readyz",
    summary="Readiness",
    description="200 when the store answers a query, HiGHS loads and (if started) the solve queue runs; else 503, "
    "whose `detail` names each failing check (the database, Redis, HiGHS, the dispatcher).",
    responses={200: Health, 503: problem_doc("A check failed; see `detail`.")},
)
def readyz():
    """200 when the store answers a query, HiGHS loads and (if started) the solve queue is running."""
    checks: dict[str, str] = {}
    failures: list[str] = []
    try:
        services().store.ping()
        checks["store"] = "ok"
    except Exception as exc:  # noqa: BLE001 - any failure means not ready
        current_app.logger.warning("readiness: store check failed: %s", exc)
        failures.append(f"store: the database does not answer ({type(exc).__name__})")
    try:
        import highspy

        highspy.Highs()
        checks["highs"] = "ok"
    except Exception as exc:  # noqa: BLE001
        failures.append(f"highs: {type(exc).__name__}: {exc}")
    if current_app.config["START_WORKERS"]:
        reason = services().queue.unready_reason()
        if reason is None:
            checks["queue"] = "ok"
        else:
            failures.append(f"queue: {reason}")
    if failures:
        raise ApiProblem(503, "not ready: " + "; ".join(failures), headers={"Retry-After": str(OUTAGE_RETRY_AFTER_S)})
    return Health(status="ready", checks=checks).model_dump()
