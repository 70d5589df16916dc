"""/v1/queueing-studies: the same analysis as `optsched queueing`, through the solver pool, with its front plot."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest

from optsched.queueing import analyze
from tests.support.polling import poll

SEASON = Path(__file__).resolve().parents[2] / "models" / "studies" / "season.json"


@pytest.fixture
def season() -> dict:
    return json.loads(SEASON.read_text())


def test_a_study_is_analysed_by_the_workers_as_the_library_does(live, season):
    created = live.post("/v1/queueing-studies", json={"study": season})
    assert created.status_code == 202
    body = poll(live, created.headers["Location"], timeout_s=120)
    expected = analyze(season)
    assert body["status"] == ("done" if expected.ok else "infeasible")
    spec = live.get("/openapi.json").get_json()
    # The published schema describes the answer (two enums named Status once made it a lie).
    resource = {"$ref": "#/components/schemas/QueueingStudyResource", "components": spec["components"]}
    jsonschema.validate(body, resource, cls=jsonschema.Draft202012Validator)
    result = body["result"]
    assert result["caps"] == expected.caps and result["mean_power_w"] == pytest.approx(expected.mean_power_w)
    got = {c["name"]: c["mean_response_hours"] for c in result["classes"]}
    assert got == pytest.approx({c.name: c.mean_response_hours for c in expected.classes})
    png = live.get(created.headers["Location"] + "/plot.png")
    assert png.status_code == 200 and png.data.startswith(b"\x89PNG")
    page = live.get(f"/queueing-studies/{body['id']}")
    assert page.status_code == 200 and page.mimetype == "text/html"
    html = page.get_data(as_text=True)
    assert 'id="classes"' in html and 'id="queueing-chart"' in html
    assert all(f"<td>{c.name}</td>" in html for c in expected.classes)
    assert live.delete(created.headers["Location"]).status_code == 204
    assert live.get(created.headers["Location"]).status_code == 404


def test_an_invalid_study_is_a_422_naming_the_path_inside_the_study(client, season):
    bad = copy.deepcopy(season)
    bad["classes"][0]["parallel_fraction"] = "0.9"  # strings are not numbers
    response = client.post("/v1/queueing-studies", json={"study": bad})
    assert response.status_code == 422
    assert [e["path"] for e in response.get_json()["errors"]] == ["study.classes[0].parallel_fraction"]
    assert client.post("/v1/queueing-studies", json={"study": season, "method": "guess"}).status_code == 422


def test_a_queued_study_is_cancelled_then_deleted(client, season):
    created = client.post("/v1/queueing-studies", json={"study": season, "method": "simulation", "seed": 3})
    assert created.status_code == 202
    cancelled = client.delete(created.headers["Location"])
    assert cancelled.status_code == 200 and cancelled.get_json()["status"] == "cancelled"
    assert client.get(created.headers["Location"] + "/plot.png").status_code == 409


@pytest.mark.slow
def test_a_study_costs_no_more_than_the_settings_allow_before_it_is_stored(make_app, season):
    """Issue 25: a 298-byte simulation study on 1,000,000 devices held a worker for 305 s; studies were held to no
    device limit, and classes, cap combinations and simulation work had no setting."""
    client = make_app(
        QUEUEING_MAX_CLASSES=2, QUEUEING_MAX_COMBINATIONS=3, QUEUEING_MAX_SIMULATION_WORK=10**8
    ).test_client()
    huge = copy.deepcopy(season)
    huge["devices"][0]["count"] = 1_000_000
    response = client.post("/v1/queueing-studies", json={"study": huge, "method": "simulation"})
    assert response.status_code == 422
    errors = response.get_json()["errors"]
    assert [e["path"] for e in errors][:2] == ["study.devices", "study.classes"]
    assert "OPTSCHED_MAX_DEVICES" in errors[0]["message"] and "OPTSCHED_QUEUEING_MAX_CLASSES" in errors[1]["message"]
    free = copy.deepcopy(season)
    free["classes"] = free["classes"][:2]
    for k in free["classes"]:
        k.pop("cap_w", None)
    response = client.post("/v1/queueing-studies", json={"study": free})
    assert response.status_code == 422
    assert "OPTSCHED_QUEUEING_MAX_COMBINATIONS" in response.get_json()["errors"][0]["message"]
    many = copy.deepcopy(season)
    many["devices"][0]["count"] = 8_000
    client = make_app(QUEUEING_MAX_SIMULATION_WORK=10**8).test_client()
    response = client.post("/v1/queueing-studies", json={"study": many, "method": "simulation"})
    assert response.status_code == 422 and response.get_json()["errors"][0]["path"] == "method"
    assert "OPTSCHED_QUEUEING_MAX_SIMULATION_WORK" in response.get_json()["errors"][0]["message"]


def test_a_law_that_cannot_have_the_scv_is_a_422_at_its_path(client, season):
    bad = copy.deepcopy(season)
    bad["classes"][1]["work_hours"]["distribution"] = "hyperexponential"  # scv 1.0 is allowed (exponential)
    bad["classes"][0]["work_hours"]["distribution"] = "erlang"  # scv 1.5 is no Erlang law
    response = client.post("/v1/queueing-studies", json={"study": bad})
    assert response.status_code == 422
    assert [e["path"] for e in response.get_json()["errors"]] == ["study.classes[0].work_hours.distribution"]
