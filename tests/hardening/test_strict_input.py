"""Strict JSON at the edge: JSON's own types only, no duplicate keys, no unpaired surrogates, dates in the one
documented format, ids of printable characters; every rejection a 422 naming the path, and nothing stored."""

from __future__ import annotations

import base64
import copy
import json
import re

import pytest

from api.examples import NIGHT_QUEUE, PLAN, WORKLOAD
from tests.hardening.conftest import paths, problem
from tests.support.polling import poll


def workload() -> dict:
    return copy.deepcopy(WORKLOAD)


def night(**changes) -> dict:
    return {"queue": copy.deepcopy(NIGHT_QUEUE), "start": "2026-12-01T22:00", "hours": 8.0, **changes}


def post(client, route: str, body: dict):
    return client.post(route, data=json.dumps(body), content_type="application/json")


@pytest.mark.parametrize(
    "change, path",
    [
        (lambda w: w["jobs"][0].update(parallel_fraction="0.95"), "jobs[0].parallel_fraction"),
        (lambda w: w["devices"][0].update(count=True), "devices[0].count"),
        (lambda w: w["devices"][0].update(count=4.0), "devices[0].count"),
        (lambda w: w["jobs"][0].update(work_hours="1e3"), "jobs[0].work_hours"),
        (lambda w: w["jobs"][0].update(min_devices="2"), "jobs[0].min_devices"),
        (lambda w: w["options"].update(time_limit_s="5"), "options.time_limit_s"),
        (lambda w: w["power"].update(budget_w=False), "power.budget_w"),
    ],
    ids=["string-fraction", "bool-count", "float-count", "string-hours", "string-int", "string-limit", "bool-watts"],
)
def test_no_string_or_boolean_is_coerced_to_a_number(make_app, change, path):
    client = make_app().test_client()
    body = workload()
    change(body)
    assert path in paths(post(client, "/v1/plans", body))
    assert client.get("/v1/plans").get_json()["items"] == []
    assert post(client, "/v1/plans", workload()).status_code == 202  # the same workload with JSON numbers is fine


def test_night_fields_are_strict_too(make_app):
    client = make_app().test_client()
    for change, path in (
        ({"hours": "8"}, "hours"),
        ({"preempt": "true"}, "preempt"),
        ({"preempt": 1}, "preempt"),
        ({"start": 1700000000}, "start"),
        ({"start": "1700000000"}, "start"),
        ({"start": "9999-12-31T23:00"}, "start"),
        ({"start": "2026-12-01 22:00"}, "start"),
    ):
        assert paths(post(client, "/v1/night-plans", night(**change))) == [path], change
    queue = copy.deepcopy(NIGHT_QUEUE)
    queue["jobs"][0]["elastic"] = "yes"
    assert "queue.jobs[0].elastic" in paths(post(client, "/v1/night-plans", night(queue=queue)))
    assert post(client, "/v1/night-plans", night()).status_code == 202


def test_the_night_start_is_returned_as_it_was_given_in_the_documented_format(make_app):
    client = make_app().test_client()
    spec = client.get("/openapi.json").get_json()
    pattern = spec["components"]["schemas"]["NightPlanRequest"]["properties"]["start"]["pattern"]
    assert spec["components"]["schemas"]["NightPlan"]["properties"]["start"]["pattern"] == pattern
    example = spec["paths"]["/v1/night-plans"]["post"]["requestBody"]["content"]["application/json"]["example"]
    assert re.fullmatch(pattern.strip("^$"), example["start"])  # the example itself is in the documented format
    for given, stored in (
        ("2026-12-01T22:00", "2026-12-01T22:00:00"),
        ("2026-12-01T22:00:30+01:00", "2026-12-01T22:00:30+01:00"),
    ):
        created = post(client, "/v1/night-plans", night(start=given))
        assert created.status_code == 202
        record = client.application.extensions["optsched"].store.get(created.get_json()["id"])
        assert record.params["start"] == stored and re.fullmatch(pattern.strip("^$"), stored)


@pytest.mark.slow
def test_a_solved_night_plan_returns_its_start_with_an_offset_in_the_documented_format(make_app):
    client = make_app(START_WORKERS=True, WORKERS=1).test_client()
    spec = client.get("/openapi.json").get_json()
    pattern = spec["components"]["schemas"]["NightPlan"]["properties"]["start"]["pattern"].strip("^$")
    created = post(client, "/v1/night-plans", night(start="2026-12-01T22:00+01:00", hours=2.0))
    assert created.status_code == 202
    body = poll(client, created.headers["Location"], timeout_s=120)
    assert body["status"] not in ("queued", "solving"), body["status"]
    assert body["night_plan"]["start"] == "2026-12-01T22:00:00+01:00"
    assert re.fullmatch(pattern, body["night_plan"]["start"])
    assert all(re.fullmatch(pattern, e["at"]) for e in body["night_plan"]["events"])


def test_query_counts_are_digits_only(make_app):
    client = make_app().test_client()
    for limit in ("1.0", "1e1", " 1", "true", "0x10"):
        assert paths(client.get(f"/v1/plans?limit={limit}")) == ["limit"], limit
    assert client.get("/v1/plans?limit=1").status_code == 200


def test_a_duplicate_key_is_a_422_naming_where_it_is(make_app):
    client = make_app().test_client()
    text = json.dumps(workload())
    doubled = text.replace('"parallel_fraction": 0.95', '"parallel_fraction": 0.95, "parallel_fraction": 0.1', 1)
    assert doubled != text
    body = problem(client.post("/v1/plans", data=doubled, content_type="application/json"), 422)
    assert [e["path"] for e in body["errors"]] == ["jobs[0]"]
    assert "'parallel_fraction'" in body["errors"][0]["message"]
    top = '{"name": "a", "name": "b", ' + text[1:]
    assert paths(client.post("/v1/plans", data=top, content_type="application/json")) == [""]
    assert client.get("/v1/plans").get_json()["items"] == []


def test_an_unpaired_surrogate_is_a_422_with_its_path(make_app):
    client = make_app().test_client()
    text = json.dumps(workload()).replace('"eval"', '"ev\\ud800al"', 1)
    assert paths(client.post("/v1/plans", data=text, content_type="application/json")) == ["jobs[1].id"]
    paired = json.dumps(workload()).replace('"eval"', '"ev\\ud83d\\ude00al"', 1)  # an emoji, as a pair: fine
    assert client.post("/v1/plans", data=paired, content_type="application/json").status_code == 202


@pytest.mark.parametrize(
    "bad", ["a\u202eb", "a\u2066b", "a\x1bb", "a\x00b", "a\u200fb", "a\x85b", "a\ufeffb"],
    ids=["RLO", "LRI", "ESC", "NUL", "RLM", "NEL", "BOM"],
)
def test_ids_and_names_hold_printable_characters_only(make_app, bad):
    client = make_app().test_client()
    for change, path in (
        (lambda w: w["jobs"][0].update(id=bad), "jobs[0].id"),
        (lambda w: w["devices"][0].update(id=bad), "devices[0].id"),
        (lambda w: w.update(name=bad), "name"),
        (lambda w: w["power"]["domains"].update({bad: 10.0}), f"power.domains.{bad}"),
    ):
        body = workload()
        change(body)
        assert any(p.startswith(path) for p in paths(post(client, "/v1/plans", body))), (bad, path)
    ok = workload()
    ok["jobs"][0]["id"] = "entraînement 训练 (v2)"
    assert post(client, "/v1/plans", ok).status_code == 202


def test_the_published_id_pattern_is_the_rule_the_server_applies(make_app):
    """A JSON Schema validator reading the served pattern agrees with the server on every sample."""
    import re

    from optsched.schema.workload import ID_PATTERN, printable

    spec = make_app().test_client().get("/openapi.json").get_json()
    served = spec["components"]["schemas"]["Job"]["properties"]["id"]["pattern"]
    assert served == ID_PATTERN
    for sample in ("ok", "a b", "日本", "a\u202eb", "x\x7f", "\u061c", "é", "a\u00adb", "tab\there"):
        try:
            printable(sample)
            accepted = True
        except ValueError:
            accepted = False
        assert bool(re.fullmatch(served.strip("^$"), sample)) == accepted, repr(sample)


def test_a_verified_plan_is_read_strictly(make_app):
    client = make_app().test_client()
    plan = copy.deepcopy(PLAN)
    assert post(client, "/v1/verify", {"workload": workload(), "plan": plan}).status_code == 200
    plan["power_w"] = "12"
    plan["placements"][0]["allocations"][0]["count"] = True
    assert sorted(paths(post(client, "/v1/verify", {"workload": workload(), "plan": plan}))) == [
        "plan.placements[0].allocations[0].count",
        "plan.power_w",
    ]


def test_a_bad_body_says_what_is_wrong_without_python_internals(make_app):
    client = make_app().test_client()
    for raw in (b'{"a": 1,,}', b"\xff\xfe{}", b"[" * 100_000, b'{"a": NaN}'):
        body = problem(client.post("/v1/plans", data=raw, content_type="application/json"), 400)
        detail = body["detail"]
        for internal in ("Error", "codec", "(char ", "Traceback", "position", "recursion"):
            assert internal not in detail, (raw[:20], detail)


@pytest.mark.parametrize(
    "raw", ["9999-12-31T23:59:59-14:00|zz", "0001-01-01T00:00:00+14:00|zz", "2026-01-01T00:00:00+00:00|x|y"]
)
def test_a_crafted_cursor_is_a_422_on_the_api_and_a_400_page_on_the_viewer(make_app, raw):
    client = make_app().test_client()
    cursor = base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")
    assert paths(client.get("/v1/plans", query_string={"cursor": cursor})) == ["cursor"]
    page = client.get("/", query_string={"cursor": cursor})
    assert page.status_code == 400 and page.mimetype == "text/html"


def test_any_cursor_of_the_published_shape_is_a_valid_page(make_app):
    client = make_app().test_client()
    for _ in range(3):
        assert post(client, "/v1/plans", workload()).status_code == 202
    first = client.get("/v1/plans?limit=2").get_json()
    second = client.get("/v1/plans", query_string={"limit": 2, "cursor": first["next_cursor"]}).get_json()
    assert len(first["items"]) == 2 and len(second["items"]) == 1 and second["next_cursor"] is None
    assert {i["id"] for i in first["items"]}.isdisjoint(i["id"] for i in second["items"])
    for cursor in ("0-" + "0" * 32, "9" * 16 + "-" + "f" * 32):
        assert client.get("/v1/plans", query_string={"cursor": cursor}).status_code == 200
