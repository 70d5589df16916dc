"""/v1/verify, /healthz, /readyz and the generated OpenAPI document."""

from __future__ import annotations

import pytest

import optsched
from api import services
from tests.api.helpers import tiny_workload


def solved(data):
    result = optsched.plan(data)
    assert result.feasible
    return result.model_dump(mode="json")


def test_verify_accepts_a_valid_plan(client):
    data = tiny_workload()
    response = client.post("/v1/verify", json={"workload": data, "plan": solved(data)})
    assert response.status_code == 200
    assert response.get_json() == {"violations": []}


def test_verify_lists_the_violations_of_an_edited_plan(client):
    data = tiny_workload()
    plan = solved(data)
    admitted = next(p for p in plan["placements"] if p["admitted"])
    admitted["allocations"][0]["count"] += 10  # more devices than the group has
    response = client.post("/v1/verify", json={"workload": data, "plan": plan})
    assert response.status_code == 200
    violations = response.get_json()["violations"]
    assert any("devices allocated but the group has" in v for v in violations), violations


def test_verify_rejects_documents_that_do_not_parse_with_their_paths(client):
    data = tiny_workload()
    plan = solved(data)
    plan["status"] = "great"
    del plan["placements"][0]["admitted"]
    bad_workload = dict(data, jobs=[{"id": "a", "work_hours": -1, "parallel_fraction": 0.5}])
    response = client.post("/v1/verify", json={"workload": bad_workload, "plan": plan})
    assert response.status_code == 422
    assert response.mimetype == "application/problem+json"
    paths = {e["path"] for e in response.get_json()["errors"]}
    assert paths == {"workload.jobs[0].work_hours", "plan.status", "plan.placements[0].admitted"}, paths
    missing = client.post("/v1/verify", json={"workload": data})
    assert [e["path"] for e in missing.get_json()["errors"]] == ["plan"]
    extra = client.post("/v1/verify", json={"workload": data, "plan": solved(data), "note": 1})
    assert [e["path"] for e in extra.get_json()["errors"]] == ["note"]


def test_healthz_and_readyz(client, live):
    assert client.get("/healthz").get_json() == {"status": "ok", "checks": {}}
    ready = live.get("/readyz")
    assert ready.status_code == 200
    assert ready.get_json()["checks"] == {"store": "ok", "highs": "ok", "queue": "ok"}


def test_readyz_is_503_when_the_store_fails(app, client, monkeypatch):
    def down():
        raise OSError("disk gone")

    monkeypatch.setattr(services(app).store, "ping", down)
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.mimetype == "application/problem+json"
    assert "store" in response.get_json()["detail"]
    assert client.get("/healthz").status_code == 200


@pytest.mark.slow
def test_readyz_is_503_when_the_solve_queue_is_down(make_app):
    app = make_app(START_WORKERS=True, WORKERS=1)
    services(app).queue.stop()
    response = app.test_client().get("/readyz")
    assert response.status_code == 503
    assert "queue" in response.get_json()["detail"]


def test_openapi_document_is_generated_from_the_models(client):
    spec = client.get("/openapi.json").get_json()
    assert spec["openapi"].startswith("3.1")
    assert set(spec["paths"]) == {
        "/v1/plans",
        "/v1/plans/{plan_id}",
        "/v1/night-plans",
        "/v1/night-plans/{night_plan_id}",
        "/v1/night-plans/{night_plan_id}/gantt.png",
        "/v1/night-plans/{night_plan_id}/power.png",
        "/v1/frontiers",
        "/v1/frontiers/{frontier_id}",
        "/v1/frontiers/{frontier_id}/plot.png",
        "/v1/verify",
        "/v1/plans/{plan_id}/replans",
        "/v1/replans/{replan_id}",
        "/v1/queueing-studies",
        "/v1/queueing-studies/{study_id}",
        "/v1/queueing-studies/{study_id}/plot.png",
        "/healthz",
        "/readyz",
    }  # the HTML viewer (/, /plans/{id}, ...) is not part of the API document
    assert set(spec["paths"]["/v1/plans"]) == {"get", "post"}
    assert set(spec["paths"]["/v1/plans/{plan_id}"]) == {"get", "delete"}
    schemas = spec["components"]["schemas"]
    # optsched's own models, not a second schema
    assert {"Workload", "Plan", "PlanResource", "Problem"} <= set(schemas)
    body = spec["paths"]["/v1/plans"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/Workload"}
    assert set(schemas["Workload"]["properties"]) == set(optsched.Workload.model_fields)
    responses = spec["paths"]["/v1/plans"]["post"]["responses"]
    assert {"201", "202", "400", "413", "415", "422", "503"} <= set(responses)
    assert "401" not in responses  # this server runs without a token: the spec says no auth
    assert "application/problem+json" in responses["422"]["content"]


def test_openapi_document_asks_for_the_token_only_when_the_server_has_one(make_app):
    spec = make_app(API_TOKEN="spec-token-0123456789").test_client().get("/openapi.json").get_json()
    assert "401" in spec["paths"]["/v1/plans"]["post"]["responses"]
    assert spec["paths"]["/v1/plans"]["post"].get("security") or spec.get("security")


def test_docs_page_is_served_with_its_assets(client):
    response = client.get("/docs")
    assert response.status_code == 302
    page = client.get(response.headers["Location"])
    assert page.status_code == 200
    assert b"swagger-ui" in page.data
    # the page's relative URLs, resolved against /docs/swagger
    with client.get("/docs/swagger/js/swagger-ui-bundle.js") as script:
        assert script.status_code == 200
    assert client.get("/docs/openapi.json").get_json() == client.get("/openapi.json").get_json()
