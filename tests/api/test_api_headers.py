"""Security headers (api/headers.py) on every response: every route of the URL map with and without the token,
the error responses of every kind, the docs pages without inline code; the HTTP server's own errors are checked
in tests/hardening/test_server.py."""

from __future__ import annotations

import re

import pytest
from sqlalchemy.exc import OperationalError

from api import services
from api.headers import DOCS_POLICY, NOTHING_POLICY, PAGE_POLICY
from tests.api.helpers import tiny_workload

TOKEN = "headers-test-token-0123456789"
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
JSON = "application/json"


def policy(response) -> dict[str, str]:
    """The Content-Security-Policy as {directive: sources}."""
    text = response.headers.get("Content-Security-Policy")
    assert text, (response.request.path, response.status_code, "no Content-Security-Policy")
    return dict((d.strip().split(" ", 1) + [""])[:2] for d in text.split(";") if d.strip())


def assert_secured(response, where: str) -> dict[str, str]:
    """The headers every response carries, and a CSP that frames nothing, runs no inline or eval'd code."""
    assert response.headers.get("X-Content-Type-Options") == "nosniff", where
    assert response.headers.get("X-Frame-Options") == "DENY", where
    assert response.headers.get("Referrer-Policy") == "no-referrer", where
    directives = policy(response)
    assert directives["default-src"] == "'none'", where
    assert directives["frame-ancestors"] == "'none'", where
    assert directives["base-uri"] == "'none'", where
    assert directives.get("script-src", "'self'") == "'self'", where  # files of this server or nothing
    assert "unsafe-eval" not in response.headers["Content-Security-Policy"], where
    return directives


def every_route(app) -> list[tuple[str, str, str]]:
    """(method, URL, endpoint) for every rule of the URL map and each of its methods; path arguments filled."""
    routes = []
    for rule in app.url_map.iter_rules():
        url = re.sub(r"<(?:[^:>]+:)?([^>]+)>", lambda m: "css/swagger-ui.css" if m.group(1) == "filename" else "x1",
                     rule.rule)
        routes += [(method, url, rule.endpoint) for method in sorted(rule.methods & set(METHODS))]
    return routes


@pytest.mark.parametrize("token", [None, TOKEN], ids=["open", "with-token"])
def test_every_route_of_the_url_map_answers_with_the_security_headers(make_app, token):
    app = make_app(API_TOKEN=token)
    client = app.test_client()
    routes = every_route(app)
    assert len(routes) >= 45, routes  # the whole map: /v1, the viewer, docs, health, /metrics, static files
    statuses = set()
    for method, url, endpoint in routes:
        for headers in ({}, {"Authorization": f"Bearer {TOKEN}"}) if token else ({},):
            response = client.open(url, method=method, json=tiny_workload(), headers=headers)
            where = (method, url, response.status_code)
            directives = assert_secured(response, str(where))
            blueprint = endpoint.rpartition(".")[0]
            expected = {"viewer": PAGE_POLICY, "swagger": DOCS_POLICY, "openapi": DOCS_POLICY}.get(blueprint)
            assert response.headers["Content-Security-Policy"] == (expected or NOTHING_POLICY), where
            if expected is None:  # JSON, PNG, problem documents, /metrics: nothing may load or run
                assert set(directives) == {"default-src", "base-uri", "form-action", "frame-ancestors"}, where
            statuses.add(response.status_code)
    assert {200, 404}.issubset(statuses) and (token is None or 401 in statuses), statuses


def test_error_responses_of_every_kind_carry_the_headers(make_app, monkeypatch):
    app = make_app(API_TOKEN=TOKEN, MAX_BODY_MB=0.001)
    client = app.test_client()
    auth = {"Authorization": f"Bearer {TOKEN}"}
    cases = {
        401: client.get("/v1/plans"),
        404: client.get("/no-such-page"),
        405: client.put("/healthz"),
        415: client.post("/v1/plans", data="x", headers={**auth, "Content-Type": "text/plain"}),
        400: client.post("/v1/plans", data="{", headers={**auth, "Content-Type": JSON}),
        413: client.post("/v1/plans", data="[" + "1," * 2000 + "1]", headers={**auth, "Content-Type": JSON}),
        422: client.get("/v1/plans?limit=0", headers=auth),
    }

    def down(*args, **kwargs):
        raise OperationalError("SELECT", {}, Exception("the database is gone"))

    monkeypatch.setattr(services(app).store, "list", down)
    cases[503] = client.get("/v1/plans", headers=auth)

    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(services(app).store, "get", broken)
    cases[500] = client.get("/v1/plans/x1", headers=auth)
    for status, response in cases.items():
        assert response.status_code == status, (status, response.get_data(as_text=True))
        assert response.mimetype == "application/problem+json", status
        assert response.headers["Content-Security-Policy"] == NOTHING_POLICY, status
        assert_secured(response, str(status))


@pytest.mark.parametrize("url", ["/docs/swagger", "/docs/"])
def test_the_docs_pages_hold_no_inline_script_so_their_policy_allows_none(client, url):
    response = client.get(url)
    assert response.status_code == 200 and response.mimetype == "text/html"
    directives = assert_secured(response, url)
    assert directives["script-src"] == "'self'" and directives["connect-src"] == "'self'"
    html = response.get_data(as_text=True)
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", html, re.DOTALL)
    assert all('src="' in attributes and not body.strip() for attributes, body in scripts), scripts
    assert not re.search(r"\son\w+\s*=", html), "an inline event handler"
    assert not re.search(r"\sstyle\s*=", html), "an inline style attribute"
    if url == "/docs/swagger":
        assert len(scripts) == 3  # Swagger UI's bundle and preset, and our start-up file
        start = client.get(re.findall(r'src="(/assets/[^"]+swagger-init\.js)"', html)[0])
        assert start.status_code == 200 and b"SwaggerUIBundle" in start.data


def test_a_view_that_sets_its_own_header_keeps_it(client):
    response = client.get("/plans/x1")  # the viewer's 404 page: its own Cache-Control, the app's security headers
    assert response.status_code == 404 and response.headers["Cache-Control"] == "no-store"
    assert response.headers["Content-Security-Policy"] == PAGE_POLICY
