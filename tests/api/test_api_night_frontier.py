"""/v1/night-plans and /v1/frontiers: always 202, the same queue, store, errors and auth as /v1/plans; charts."""

from __future__ import annotations

import pytest

import optsched
from api import services
from optsched.verify.timeline import verify_timeline
from tests.api.helpers import drawn, night_queue, tiny_workload
from tests.night.test_night_exact import hand_queue, spans
from tests.support.factories import device, job, workload
from tests.support.polling import poll

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def night_request(queue=None, **arguments):
    queue = queue if queue is not None else night_queue()
    return {"queue": queue, "start": "2026-12-01T22:00", "hours": 8, **arguments}


def problem(response, status: int) -> dict:
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/problem+json"
    return response.get_json()


def assert_png(response) -> None:
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.mimetype == "image/png"
    assert response.data.startswith(PNG_SIGNATURE)


@pytest.mark.slow
def test_a_night_plan_is_accepted_planned_and_its_timeline_is_the_hand_computed_one(live):
    queue = hand_queue()
    response = live.post("/v1/night-plans", json=night_request(queue, hours=6))
    assert response.status_code == 202
    body = response.get_json()
    assert response.headers["Location"] == f"/v1/night-plans/{body['id']}"
    assert body["status"] in ("queued", "solving") and body["night_plan"] is None
    final = poll(live, response.headers["Location"])
    assert final["status"] == "met", final
    assert verify_timeline(queue, final["night_plan"]) == []
    night = optsched.NightPlan.model_validate(final["night_plan"])
    assert night.hours == 6 and night.start.isoformat() == "2026-12-01T22:00:00"
    assert spans(night)["C"] == [(2.0, 2.5, 1.0, (("g", (1,), 100.0),)), (2.5, 3.5, 0.5, (("g", (1,), 50.0),))]
    gantt = drawn(live, f"{response.headers['Location']}/gantt.png")
    assert_png(gantt)
    assert gantt.headers["Cache-Control"] == "private, no-cache"
    again = live.get(f"{response.headers['Location']}/gantt.png", headers={"If-None-Match": gantt.headers["ETag"]})
    assert again.status_code == 304 and not again.data
    assert_png(drawn(live, f"{response.headers['Location']}/power.png"))


def test_night_arguments_reach_plan_night(live):
    queue = night_queue("preempting")
    final = poll(live, live.post("/v1/night-plans", json=night_request(queue, preempt=True, restart_hours=0.25))
                 .headers["Location"])
    assert final["status"] == "met", final
    assert final["night_plan"]["preempt"] is True and final["night_plan"]["restart_hours"] == 0.25
    assert final["night_plan"]["budget_cut"] == []
    assert verify_timeline(queue, final["night_plan"]) == []
    # A budget the first timeline spends: that timeline, whole, and every other candidate named as cut.
    cut = poll(live, live.post("/v1/night-plans", json=night_request(queue, budget_s=1e-6)).headers["Location"])
    assert cut["night_plan"]["chosen"] == "dispatch-priority" and "milp" in cut["night_plan"]["budget_cut"]
    assert verify_timeline(queue, cut["night_plan"]) == []


def test_a_queued_night_plan_has_no_chart_yet_then_is_cancelled_then_deleted(app, client):
    location = client.post("/v1/night-plans", json=night_request()).headers["Location"]
    assert services(app).queue.depth() == 1
    body = problem(client.get(f"{location}/gantt.png"), 409)
    assert "queued" in body["detail"] and location in body["detail"]
    cancelled = client.delete(location)
    assert cancelled.status_code == 200 and cancelled.get_json()["status"] == "cancelled"
    assert services(app).queue.depth() == 0
    assert "cancelled" in problem(client.get(f"{location}/gantt.png"), 409)["detail"]
    app.config["CANCEL_REPLAY_S"] = 0  # after OPTSCHED_CANCEL_REPLAY_S, a DELETE deletes
    assert client.delete(location).status_code == 204
    problem(client.get(location), 404)
    problem(client.get(f"{location}/gantt.png"), 404)
    problem(client.delete(location), 404)


def test_night_plan_validation_lists_every_field_with_its_path_in_the_request(client):
    queue = night_queue()
    queue["jobs"][0]["work_hours"] = -1
    body = problem(client.post("/v1/night-plans", json={"queue": queue, "hours": 0, "preempt": "maybe"}), 422)
    assert body["type"] == "urn:optsched:problem:invalid-workload"
    assert {e["path"] for e in body["errors"]} == {"queue.jobs[0].work_hours", "start", "hours", "preempt"}
    # checks beyond the model (budgets below the idle draw) come back with the queue's paths too
    low = night_queue()
    low["power"]["windows"][0]["budget_w"] = 1
    body = problem(client.post("/v1/night-plans", json=night_request(low)), 422)
    assert [e["path"] for e in body["errors"]] == ["queue.power.windows[0].budget_w"]
    assert "idle draw" in body["errors"][0]["message"]
    problem(client.post("/v1/night-plans", json=night_request(start="9999-12-31T23:00", hours=8)), 422)
    problem(client.post("/v1/night-plans", json={**night_request(), "extra": 1}), 422)
    for budget in (0, -1, 86_401, "20"):
        body = problem(client.post("/v1/night-plans", json=night_request(budget_s=budget)), 422)
        assert [e["path"] for e in body["errors"]] == ["budget_s"]
    assert client.get("/v1/plans").get_json()["items"] == []  # nothing was stored


def test_a_frontier_is_planned_and_each_point_is_the_optimum_at_its_budget(live):
    data = tiny_workload("frontier")
    budgets = [300.0, 450.0, 600.0]
    response = live.post("/v1/frontiers", json={"workload": data, "budgets": budgets})
    assert response.status_code == 202
    final = poll(live, response.headers["Location"])
    assert final["status"] == "done", final
    points = final["frontier"]["points"]
    assert [p["budget_w"] for p in points] == budgets
    for point in points:
        at_budget = {**data, "power": {**data["power"], "budget_w": point["budget_w"]}}
        alone = optsched.plan(at_budget)
        assert optsched.verify(at_budget, alone) == []
        assert point["weighted_speedup"] == pytest.approx(alone.weighted_speedup, rel=0.01)
        assert point["power_w"] <= point["budget_w"] + 1e-6
    assert [p["weighted_speedup"] for p in points] == sorted(p["weighted_speedup"] for p in points)
    assert_png(drawn(live, f"{response.headers['Location']}/plot.png"))


def test_the_frontier_sweep_finds_its_own_budgets(live):
    final = poll(live, live.post("/v1/frontiers", json={"workload": tiny_workload("sweep")}).headers["Location"])
    assert final["status"] == "done", final
    frontier = final["frontier"]
    assert len(frontier["points"]) >= 12
    assert frontier["least_feasible_w"] <= frontier["knee_budget_w"] <= frontier["saturation_w"]


def test_a_workload_without_any_plan_has_an_infeasible_frontier_and_no_plot(live):
    data = workload(
        [device("g", "m", 2, [(100, 1.0)], memory_gb=40)],
        [job("big", memory_gb=120, priority="critical", deadline_hours=5)],
        options={"time_limit_s": 10},
    )
    location = live.post("/v1/frontiers", json={"workload": data}).headers["Location"]
    final = poll(live, location)
    assert final["status"] == "infeasible", final
    assert final["frontier"]["points"] == [] and "120 GB" in final["frontier"]["reason"]
    assert "120 GB" in problem(live.get(f"{location}/plot.png"), 409)["detail"]


def test_frontier_validation_reports_the_budgets_path(client):
    body = problem(client.post("/v1/frontiers", json={"workload": tiny_workload(), "budgets": [500, -1]}), 422)
    assert [e["path"] for e in body["errors"]] == ["budgets[1]"]
    body = problem(client.post("/v1/frontiers", json={"workload": {"devices": []}, "budgets": []}), 422)
    assert {e["path"] for e in body["errors"]} == {"workload.devices", "budgets"}


def test_kinds_do_not_leak_into_each_others_urls_or_listings(client):
    plan_id = client.post("/v1/plans", json=tiny_workload()).get_json()["id"]
    night_id = client.post("/v1/night-plans", json=night_request()).get_json()["id"]
    frontier_id = client.post("/v1/frontiers", json={"workload": tiny_workload()}).get_json()["id"]
    problem(client.get(f"/v1/plans/{night_id}"), 404)
    problem(client.get(f"/v1/night-plans/{plan_id}"), 404)
    problem(client.get(f"/v1/frontiers/{night_id}/plot.png"), 404)
    problem(client.delete(f"/v1/frontiers/{plan_id}"), 404)
    assert [i["id"] for i in client.get("/v1/plans").get_json()["items"]] == [plan_id]
    assert client.get(f"/v1/night-plans/{night_id}").get_json()["status"] == "queued"
    assert client.get(f"/v1/frontiers/{frontier_id}").get_json()["frontier"] is None


def test_idempotency_keys_replay_the_same_resource_and_are_not_shared_between_kinds(app, client):
    key = {"Idempotency-Key": "nightly-2026-12-01"}
    first = client.post("/v1/night-plans", json=night_request(), headers=key)
    second = client.post("/v1/night-plans", json=night_request(), headers=key)
    assert first.status_code == second.status_code == 202
    assert second.headers["Idempotent-Replayed"] == "true" and "Idempotent-Replayed" not in first.headers
    assert first.get_json()["id"] == second.get_json()["id"]
    assert services(app).queue.depth() == 1
    for other in (
        client.post("/v1/night-plans", json=night_request(hours=9), headers=key),
        client.post("/v1/frontiers", json={"workload": tiny_workload()}, headers=key),
        client.post("/v1/plans", json=tiny_workload(), headers=key),
    ):
        assert problem(other, 422)["type"] == "urn:optsched:problem:idempotency-key-reused"


def test_a_full_queue_answers_503_for_every_kind(make_app):
    client = make_app(QUEUE_SIZE=1).test_client()
    assert client.post("/v1/frontiers", json={"workload": tiny_workload()}).status_code == 202
    assert "Retry-After" in client.post("/v1/night-plans", json=night_request()).headers
    problem(client.post("/v1/frontiers", json={"workload": tiny_workload()}), 503)


def test_the_token_guards_the_new_routes(make_app):
    client = make_app(API_TOKEN="s3cret-0123456789abcdef").test_client()
    for method, url in (
        ("post", "/v1/night-plans"),
        ("get", "/v1/night-plans/x"),
        ("get", "/v1/night-plans/x/gantt.png"),
        ("delete", "/v1/night-plans/x"),
        ("post", "/v1/frontiers"),
        ("get", "/v1/frontiers/x/plot.png"),
    ):
        problem(getattr(client, method)(url, json={}), 401)
    good = {"Authorization": "Bearer s3cret-0123456789abcdef"}
    assert client.post("/v1/night-plans", json=night_request(), headers=good).status_code == 202
    problem(client.get("/v1/frontiers/x/plot.png", headers=good), 404)
