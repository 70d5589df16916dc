"""Every error a client can cause is an RFC 9457 problem document with the right status; none is a 500."""

from __future__ import annotations

import json

import pytest

from api import services
from tests.api.helpers import tiny_workload
from tests.support.factories import device, job, workload

PROBLEM_KEYS = {"type", "title", "status", "detail", "errors"}


def problem(response, status: int) -> dict:
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/problem+json"
    body = response.get_json()
    assert PROBLEM_KEYS <= body.keys()
    assert body["status"] == status
    return body


@pytest.mark.parametrize(
    "text",
    ["{", '{"devices": [}', "", "[1, 2", '{"devices": NaN}', '{"x": Infinity}', b"\xff\xfe"],
    ids=["open", "bracket", "empty", "array", "nan", "infinity", "bytes"],
)
def test_malformed_json_is_400(client, text):
    body = problem(client.post("/v1/plans", data=text, content_type="application/json"), 400)
    assert "not valid JSON" in body["detail"]


def test_deeply_nested_json_is_400_not_a_crash(client):
    problem(client.post("/v1/plans", data="[" * 100_000, content_type="application/json"), 400)


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_a_body_that_is_not_json_is_415(client, content_type):
    kwargs = {"content_type": content_type} if content_type else {}
    body = problem(client.post("/v1/plans", data=json.dumps(tiny_workload()), **kwargs), 415)
    assert "application/json" in body["detail"]
    problem(client.post("/v1/verify", data="{}", **kwargs), 415)


def test_a_body_over_the_limit_is_413(make_app):
    client = make_app(MAX_BODY_MB=0.001).test_client()  # about 1 kB
    big = tiny_workload()
    big["name"] = "x" * 2000
    body = problem(client.post("/v1/plans", json=big), 413)
    assert "1,048 bytes" in body["detail"]


def test_an_invalid_workload_is_422_listing_every_field_with_its_path(client):
    data = workload(
        [device("g", "m", 0, [(100, 1.0)]), device("h", "unknown-model", 2, [])],
        [job("a", p=1.5), job("a"), job("c", min_devices=3, max_devices=2)],
    )
    body = problem(client.post("/v1/plans", json=data), 422)
    assert body["type"] == "urn:optsched:problem:invalid-workload"
    paths = {e["path"] for e in body["errors"]}
    assert {"devices[0].count", "jobs[0].parallel_fraction"} <= paths, body["errors"]
    assert all(e["message"] for e in body["errors"])


def test_semantic_problems_are_422_with_paths_too(client):
    data = workload(
        [device("g", "m", 2, [(100, 1.0)]), device("h", "unknown-model", 2, [])],
        [job("a"), job("a"), job("c", min_devices=3, max_devices=2)],
    )
    body = problem(client.post("/v1/plans", json=data), 422)
    paths = {e["path"] for e in body["errors"]}
    assert paths == {"jobs[1].id", "devices[1].power_levels", "jobs[2].min_devices"}, body["errors"]


@pytest.mark.parametrize("document", [[], "a string", 3, None, {"devices": "none"}])
def test_json_that_is_not_a_workload_object_is_422(client, document):
    problem(client.post("/v1/plans", data=json.dumps(document), content_type="application/json"), 422)


def test_a_wrong_idempotency_key_header_is_422(client):
    body = problem(client.post("/v1/plans", json=tiny_workload(), headers={"Idempotency-Key": "k" * 300}), 422)
    assert [e["path"] for e in body["errors"]] == ["Idempotency-Key"]


def test_token_is_required_on_v1_routes_when_configured(make_app):
    client = make_app(API_TOKEN="s3cret-token-0123456789").test_client()
    for headers in (
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": "Basic s3cret-token-0123456789"},
        {"Authorization": "s3cret-token-0123456789"},
    ):
        body = problem(client.get("/v1/plans", headers=headers), 401)
        assert "Bearer" in body["detail"]
    response = client.get("/v1/plans")
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    # auth comes before body checks, so an anonymous caller learns nothing about the body
    problem(client.post("/v1/plans", data="{", content_type="application/json"), 401)
    problem(client.post("/v1/verify", json={}), 401)
    problem(client.delete("/v1/plans/x"), 401)
    good = {"Authorization": "Bearer s3cret-token-0123456789"}
    assert client.get("/v1/plans", headers=good).status_code == 200
    assert client.post("/v1/plans", json=tiny_workload(), headers=good).status_code == 202
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 200
    assert client.get("/openapi.json").status_code == 200


def test_unknown_route_and_wrong_method_are_problems(client):
    problem(client.get("/v2/plans"), 404)
    body = problem(client.put("/v1/plans"), 405)
    assert body["title"] == "Method Not Allowed"
    assert "POST" in client.put("/v1/plans").headers["Allow"]


def test_an_unexpected_error_is_a_500_problem_without_internals(app, client, monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise RuntimeError("secret internals /etc/passwd")

    monkeypatch.setattr(services(app).store, "get", broken)
    response = client.get("/v1/plans/abc")
    problem(response, 500)
    text = response.get_data(as_text=True)
    assert "secret" not in text and "Traceback" not in text and "RuntimeError" not in text
    assert "secret internals" in caplog.text  # logged on the server side
