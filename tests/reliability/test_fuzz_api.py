"""Promise 1 (the API side): schemathesis over /openapi.json finds no request that makes a 5xx.

Every operation gets positive and negative (schema-violating) cases, with the bearer token configured; a
stateful run chains POST -> GET/DELETE through OpenAPI links added to the document. Beyond "no 5xx", every
error must be a problem+json document and no response may echo the token, a path on the server or a
traceback. The budget here is bounded for CI; `python -m bench.reliability fuzz` runs a larger one against a
real server and records the figure.
"""

from __future__ import annotations

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig

from tests.support.api_testing import AUTH, CHECKS, SPEC, TOKEN

pytestmark = pytest.mark.slow  # real servers and solver processes, at CI's budgets

EXAMPLES = int(os.environ.get("OPTSCHED_FUZZ_EXAMPLES", "25"))
STATEFUL_STEPS = int(os.environ.get("OPTSCHED_FUZZ_STATEFUL_EXAMPLES", "15"))
schema = schemathesis.openapi.from_dict(
    SPEC, config=SchemathesisConfig.from_dict({"generation": {"mode": "all"}})
)


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
