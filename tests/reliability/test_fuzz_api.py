"""Promise 1 (the API side): schemathesis over /openapi.json finds no request that makes a 5xx.

Every operation gets positive and negative (schema-violating) cases, with the bearer token configured; a
stateful run chains POST -> GET/DELETE through OpenAPI links added to the document. Beyond "no 5xx", every
error must be a problem+json document and no response may echo the token, a path on the server or a
traceback. The budget here is bounded for CI; `python -m bench.reliability fuzz` runs a larger one against a
real server and records the figure.
"""

from __future__ import annotations

import copy
import os
import tempfile
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig

from api import create_app, shutdown
from api.errors import INVALID_REQUEST, INVALID_WORKLOAD
from tests.reliability.conftest import TOKEN

EXAMPLES = int(os.environ.get("OPTSCHED_FUZZ_EXAMPLES", "25"))
STATEFUL_STEPS = int(os.environ.get("OPTSCHED_FUZZ_STATEFUL_EXAMPLES", "15"))
AUTH = {"Authorization": f"Bearer {TOKEN}"}
PROBLEM_KEYS = {"type", "title", "status", "detail", "errors"}
# Text that would give away internals: a traceback, a source location, the configured secret.
LEAKS = ("Traceback (most recent call last)", 'File "/', ".py\", line", TOKEN)


def spec_with_links() -> dict[str, Any]:
    """The served /openapi.json, plus links from a created plan to the operations on its id."""
    with tempfile.TemporaryDirectory() as folder:
        app = create_app({"DATABASE_URL": f"sqlite:///{folder}/spec.db", "START_WORKERS": False, "API_TOKEN": None})
        try:
            spec = copy.deepcopy(app.test_client().get("/openapi.json").get_json())
        finally:
            shutdown(app)
    by_id = {op.get("operationId"): op for item in spec["paths"].values() for op in item.values()}
    links = {
        f"link_{target}": {"operationId": target, "parameters": {"plan_id": "$response.body#/id"}}
        for target in ("getPlan", "deletePlan")
        if target in by_id
    }
    for status in ("201", "202"):
        response = by_id["createPlan"]["responses"].get(status)
        if response is not None:
            response["links"] = links
    return spec


SPEC = spec_with_links()
schema = schemathesis.openapi.from_dict(
    SPEC, config=SchemathesisConfig.from_dict({"generation": {"mode": "all"}})
)


# Answered by gunicorn before the request reaches the app (request line or headers too large): its own page.
HTTP_SERVER_LIMITS = (414, 431)


def check_error_is_a_problem(ctx, response, case) -> None:
    """Every 4xx is an RFC 9457 document with the status it was sent with; a validation error lists its fields."""
    if response.status_code < 400 or response.status_code in HTTP_SERVER_LIMITS:
        return None
    content_type = response.headers.get("Content-Type") or response.headers.get("content-type") or ""
    if isinstance(content_type, list):
        content_type = content_type[0]
    assert content_type.startswith("application/problem+json"), (response.status_code, content_type)
    body = response.json()
    assert PROBLEM_KEYS <= body.keys(), body
    assert body["status"] == response.status_code, body
    if body["type"] in (INVALID_WORKLOAD, INVALID_REQUEST):
        assert body["errors"] and all("path" in e and e["message"] for e in body["errors"]), body


def check_no_internals(ctx, response, case) -> None:
    """No traceback, source path or secret in any response body or header."""
    text = response.text if isinstance(response.text, str) else response.content.decode("utf-8", "replace")
    headers = " ".join(f"{k}: {v}" for k, v in response.headers.items())
    for leak in LEAKS:
        assert leak not in text, f"response body contains {leak!r}: {text[:500]}"
        assert leak not in headers, f"response headers contain {leak!r}"


CHECKS = [not_a_server_error, check_error_is_a_problem, check_no_internals]


@pytest.fixture
def fuzz_app(make_app):
    # No solver processes, no waiting, a queue that never fills: every 503 would be a finding, not a limit.
    return make_app(API_TOKEN=TOKEN, QUEUE_SIZE=10_000_000)


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_no_request_makes_a_5xx_a_bare_error_or_a_leak(case, fuzz_app):
    case.call_and_validate(app=fuzz_app, headers=AUTH, checks=CHECKS)


def test_stateful_sequences_make_no_5xx(make_app):
    app = make_app(API_TOKEN=TOKEN, QUEUE_SIZE=10_000_000)
    machine = schema.as_state_machine()
    links = [name for name in dir(machine) if "createPlan" in name or "POST_v1_plans" in name]
    assert links, "the links from createPlan did not reach the state machine"

    class Workflow(machine):  # type: ignore[misc, valid-type]
        def get_call_kwargs(self, case):
            return {"app": app, "headers": AUTH}

        def validate_response(self, response, case, additional_checks=None, **kwargs):
            case.validate_response(response, checks=CHECKS)

    Workflow.run(
        settings=settings(
            max_examples=STATEFUL_STEPS,
            stateful_step_count=6,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
        )
    )
