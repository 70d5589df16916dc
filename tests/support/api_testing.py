"""Helpers that the tests and the benchmarks share about the REST app: the access-control route list, the
OpenAPI document with links that the fuzzers run against, and their checks. Needs the `dev` extra
(schemathesis)."""

from __future__ import annotations

import copy
import tempfile
from typing import Any

from schemathesis.checks import not_a_server_error

from api import create_app, shutdown
from api.errors import INVALID_REQUEST, INVALID_WORKLOAD

TOKEN = "rel-token-5f0c2e9a8d7b4c1e"

# Routes anyone may call: liveness/readiness probes, the API description, and static assets.
PUBLIC_PREFIXES = ("/healthz", "/readyz", "/openapi.json", "/docs", "/static/", "/assets/")
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
WRONG = {
    "none": {},
    "wrong": {"Authorization": "Bearer not-the-token"},
    "longer": {"Authorization": f"Bearer {TOKEN}x"},
    "basic": {"Authorization": f"Basic {TOKEN}"},
    "no scheme": {"Authorization": TOKEN},
}
GOOD = {"Authorization": f"Bearer {TOKEN}"}
SECRET_NAME = "confidential-workload-4711"


def protected_routes(app) -> list[tuple[str, str, str]]:
    """(method, URL, rule) for every route not in PUBLIC_PREFIXES, with `plan_id` for every id argument."""
    routes = []
    for rule in app.url_map.iter_rules():
        if str(rule).startswith(PUBLIC_PREFIXES):
            continue
        for method in sorted(rule.methods & set(METHODS)):
            routes.append((method, str(rule), rule.endpoint))
    return routes


def url_for_rule(app, endpoint: str, resource_id: str) -> str:
    rule = next(r for r in app.url_map.iter_rules() if r.endpoint == endpoint)
    return app.url_map.bind("localhost").build(endpoint, {arg: resource_id for arg in rule.arguments})



AUTH = {"Authorization": f"Bearer {TOKEN}"}
PROBLEM_KEYS = {"type", "title", "status", "detail", "errors"}
# Text that would give away internals: a traceback, a source location, the configured secret.
LEAKS = ("Traceback (most recent call last)", 'File "/', ".py\", line", TOKEN)


def spec_with_links() -> dict[str, Any]:
    """The served /openapi.json of a server without a token: it carries the links from each created resource to
    the operations on its id (api/spec.py), which the stateful fuzzers follow."""
    with tempfile.TemporaryDirectory() as folder:
        app = create_app({"DATABASE_URL": f"sqlite:///{folder}/spec.db", "START_WORKERS": False, "API_TOKEN": None,
                          "AUTH": "off"})
        try:
            return copy.deepcopy(app.test_client().get("/openapi.json").get_json())
        finally:
            shutdown(app)


SPEC = spec_with_links()


# Answered by the HTTP server before the request reaches the app; problem documents too (api/serve.py).
HTTP_SERVER_LIMITS = ()


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


