"""POST /v1/plans/{id}/replans: a finished plan re-planned after a change through the solver pool; the new plan
verifies on the changed workload, says what moved, and shows on the viewer."""

from __future__ import annotations

import json
from pathlib import Path

from optsched.replan import replan
from optsched.verify.placement import verify
from tests.support.polling import poll

DEMO = Path(__file__).resolve().parents[2] / "models" / "workloads" / "demo.json"


def finished_demo_plan(live) -> dict:
    created = live.post("/v1/plans", json=json.loads(DEMO.read_text()) | {"options": {"mip_gap": 0.01}},
                        headers={"Prefer": "respond-async"})
    body = poll(live, created.headers["Location"], timeout_s=120)
    assert body["status"] == "optimal", body["status"]
    return body


def test_a_replan_after_failures_verifies_on_the_smaller_fleet_and_lists_what_moved(live):
    parent = finished_demo_plan(live)
    used = next(a["device"] for p in parent["plan"]["placements"] for a in p["allocations"])
    change = {"device_failures": [{"device": used, "count": 1}]}
    created = live.post(f"/v1/plans/{parent['id']}/replans", json=change, headers={"Idempotency-Key": "fail-1"})
    assert created.status_code == 202 and created.headers["Location"].startswith("/v1/replans/")
    again = live.post(f"/v1/plans/{parent['id']}/replans", json=change, headers={"Idempotency-Key": "fail-1"})
    assert again.headers["Idempotent-Replayed"] == "true" and again.get_json()["id"] == created.get_json()["id"]
    body = poll(live, created.headers["Location"], timeout_s=120)
    assert body["parent"] == parent["id"] and body["status"] in ("optimal", "time_limit")
    result = body["replan"]
    assert verify(result["workload"], result["plan"]) == []
    fleet = {g["id"]: g["count"] for g in result["workload"]["devices"]}
    original = {g["id"]: g["count"] for g in parent_workload()["devices"]}
    assert fleet[used] == original[used] - 1
    assert {c["job"] for c in result["changes"]} == {j["id"] for j in result["workload"]["jobs"]}
    assert result["moved"] == sum(c["kind"] in ("resized", "moved", "stopped") for c in result["changes"])
    page = live.get(f"/replans/{body['id']}")
    assert page.status_code == 200 and 'id="changes"' in page.get_data(as_text=True)
    # The service answers what the library answers for the same inputs.
    direct = replan(parent_workload(), parent["plan"], change)
    assert direct.moved == result["moved"]


def test_a_change_that_does_not_fit_the_workload_is_a_422_with_its_path(live):
    parent = finished_demo_plan(live)
    response = live.post(
        f"/v1/plans/{parent['id']}/replans", json={"device_failures": [{"device": "nope", "count": 1}]}
    )
    assert response.status_code == 422
    assert [e["path"] for e in response.get_json()["errors"]] == ["device_failures[0].device"]
    assert live.post("/v1/plans/unknown/replans", json={}).status_code == 404


def test_a_plan_still_queued_cannot_be_replanned(client):
    created = client.post("/v1/plans", json=json.loads(DEMO.read_text()), headers={"Prefer": "respond-async"})
    response = client.post(f"/v1/plans/{created.get_json()['id']}/replans", json={"budget_w": 9000})
    assert response.status_code == 409


def parent_workload() -> dict:
    return json.loads(DEMO.read_text()) | {"options": {"mip_gap": 0.01}}


def test_the_change_document_is_validated_against_its_published_schema(client):
    response = client.post("/v1/plans/unknown/replans", json={"budget_w": "9000", "pin": "a", "surprise": 1})
    assert response.status_code == 422
    assert sorted(e["path"] for e in response.get_json()["errors"]) == ["budget_w", "pin", "surprise"]
    spec = client.get("/openapi.json").get_json()
    body = spec["paths"]["/v1/plans/{plan_id}/replans"]["post"]["requestBody"]
    assert body["required"] and "application/json" in body["content"]
