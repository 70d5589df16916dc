"""Token hygiene: the viewer logs in by a POST form (a token in the URL is never taken), its cookie expires and
dies with the token, every /v1 URL answers 401 before 404/405, and the access log never holds a query value."""

from __future__ import annotations

import re
import time

from api.serve import log_target
from tests.hardening.conftest import AUTH, TOKEN, problem


def login(client, token: str = TOKEN, next_url: str = "/"):
    return client.post("/login", data={"token": token, "next": next_url})


def test_the_login_form_posts_and_a_token_in_the_url_is_never_taken(make_app):
    client = make_app(API_TOKEN=TOKEN).test_client()
    page = client.get("/?kind=plan")
    assert page.status_code == 401
    html = page.get_data(as_text=True)
    assert '<form method="post" action="/login">' in html and 'name="token"' in html
    assert 'name="next" value="/?kind=plan"' in html
    by_url = client.get(f"/?token={TOKEN}")
    assert by_url.status_code == 401 and "never used" in by_url.get_data(as_text=True)
    assert "Set-Cookie" not in by_url.headers
    wrong = login(client, "not-it")
    assert wrong.status_code == 401 and "not the one" in wrong.get_data(as_text=True)
    done = login(client, next_url="/?kind=plan")
    assert done.status_code == 303 and done.headers["Location"] == "/?kind=plan"
    cookie = done.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and TOKEN not in cookie
    assert re.search(r"Max-Age=28800", cookie) and "Expires=" in cookie
    assert client.get("/").status_code == 200
    problem(client.get("/v1/plans"), 401)  # the cookie is no bearer token for the API


def test_login_sends_back_only_to_a_path_on_this_site(make_app):
    client = make_app(API_TOKEN=TOKEN).test_client()
    for target in ("https://evil.example/", "//evil.example/x", "/\\evil.example", "javascript:alert(1)", "/a\x00b"):
        assert login(client, next_url=target).headers["Location"] == "/", target


def test_the_cookie_expires_and_a_new_token_ends_every_session(make_app, monkeypatch):
    app = make_app(API_TOKEN=TOKEN, VIEWER_SESSION_S=60)
    client = app.test_client()
    assert "Max-Age=60" in login(client).headers["Set-Cookie"]
    assert client.get("/").status_code == 200
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 61)
    assert client.get("/").status_code == 401  # expired, even though the browser still sends it
    monkeypatch.setattr(time, "time", real)
    assert client.get("/").status_code == 200
    app.config["API_TOKEN"] = "a-new-token-1b2c"  # the operator restarts with another token
    assert client.get("/").status_code == 401
    forged = client.get_cookie("optsched_viewer").value.split(".")[0]
    client.set_cookie("optsched_viewer", f"{int(real()) + 10**6}.{'0' * 64}")
    assert client.get("/").status_code == 401 and forged.isdigit()


def test_every_v1_url_answers_401_before_404_or_405(make_app):
    client = make_app(API_TOKEN=TOKEN).test_client()
    for method, url in (("get", "/v1/nothing-here"), ("get", "/v1"), ("delete", "/v1/verify"), ("put", "/v1/plans")):
        problem(getattr(client, method)(url), 401)
    problem(client.get("/v1/nothing-here", headers=AUTH), 404)
    problem(client.delete("/v1/verify", headers=AUTH), 405)


def test_the_access_log_keeps_query_names_and_redacts_every_value():
    environ = {"PATH_INFO": "/", "QUERY_STRING": f"token={TOKEN}&cursor=abc&kind=plan"}
    assert log_target(environ) == "/?token=<redacted>&cursor=<redacted>&kind=<redacted>"
    assert log_target({"PATH_INFO": "/", "QUERY_STRING": "secret-name=1"}) == "/?<redacted>=<redacted>"
    assert TOKEN not in log_target({"PATH_INFO": "/v1/plans", "QUERY_STRING": TOKEN})
    # A path with control and bidirectional characters is logged percent-encoded, as printable ASCII.
    hostile = "/v1/plans/a\x1b[2J\u202eb".encode().decode("latin-1")
    logged = log_target({"PATH_INFO": hostile, "QUERY_STRING": ""})
    assert logged == "/v1/plans/a%1B%5B2J%E2%80%AEb" and logged.isprintable() and logged.isascii()
