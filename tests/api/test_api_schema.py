"""schemathesis against the generated /openapi.json, in process: nothing a client sends makes a 5xx."""

from __future__ import annotations

import tempfile

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from api import create_app, shutdown


def generated_spec() -> dict:
    """The document /openapi.json serves (schemathesis' fixture-based loader does not run on pytest 9)."""
    with tempfile.TemporaryDirectory() as folder:
        app = create_app({"DATABASE_URL": f"sqlite:///{folder}/spec.db", "START_WORKERS": False, "API_TOKEN": None})
        try:
            return app.test_client().get("/openapi.json").get_json()
        finally:
            shutdown(app)


schema = schemathesis.openapi.from_dict(generated_spec())


@pytest.fixture
def wsgi_app(make_app):
    # No solver processes (no solve runs), no waiting, and a queue that never fills: 503 would count as 5xx.
    return make_app(SYNC_WAIT_S=0, QUEUE_SIZE=1_000_000)


@schema.parametrize()
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_request_makes_a_server_error(case, wsgi_app):
    case.call_and_validate(app=wsgi_app, checks=[not_a_server_error])
