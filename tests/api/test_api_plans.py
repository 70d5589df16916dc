"""/v1/plans through the Flask test client: 201/202, Location, idempotency, listing, cancel and delete."""

from __future__ import annotations

import time

import pytest

from api import services
from tests.api.helpers import assert_verified, slow_workload, tiny_workload
from tests.support.polling import poll


def test_post_answers_201_with_a_plan_that_verifies(live):
    data = tiny_workload("sync")
    response = live.post("/v1/plans", json=data)
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    assert response.headers["Location"] == f"/v1/plans/{body['id']}"
    assert body["status"] == "optimal"
    assert body["submitted_at"] <= body["started_at"] <= body["finished_at"]
    assert_verified(data, body)
    again = live.get(response.headers["Location"])
    assert again.status_code == 200
    assert again.get_json() == body


def test_respond_async_answers_202_and_location_leads_to_the_plan(live):
    data = tiny_workload("async")
    response = live.post("/v1/plans", json=data, headers={"Prefer": "respond-async, wait=5"})
    assert response.status_code == 202
    assert response.headers["Preference-Applied"] == "respond-async"
    body = response.get_json()
    assert body["status"] in ("queued", "solving")
    assert body["plan"] is None
    final = poll(live, response.headers["Location"])
    assert final["status"] == "optimal"
    assert_verified(data, final)


def test_a_solve_longer_than_the_sync_wait_answers_202(client):
    # No solver processes in this app: the plan stays queued past SYNC_WAIT_S.
    response = client.post("/v1/plans", json=tiny_workload())
    assert response.status_code == 202
    assert response.get_json()["status"] == "queued"
    assert response.headers["Location"] == f"/v1/plans/{response.get_json()['id']}"


def test_idempotency_key_returns_the_same_plan_without_solving_twice(live):
    data = tiny_workload("idempotent")
    key = {"Idempotency-Key": f"key-{time.monotonic_ns()}"}
    first = live.post("/v1/plans", json=data, headers=key)
    second = live.post("/v1/plans", json=data, headers=key)
    assert first.status_code == second.status_code == 201
    assert second.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first.headers
    assert second.get_json() == first.get_json()  # same id, same timestamps: one solve
    assert_verified(data, second.get_json())
    other = live.post("/v1/plans", json=tiny_workload("something else"), headers=key)
    assert other.status_code == 422
    assert other.get_json()["type"] == "urn:optsched:problem:idempotency-key-reused"


def test_idempotent_retry_of_a_queued_plan_does_not_queue_it_again(app, client):
    key = {"Idempotency-Key": "retry-me"}
    first = client.post("/v1/plans", json=tiny_workload(), headers=key)
    second = client.post("/v1/plans", json=tiny_workload(), headers=key)
    assert first.status_code == second.status_code == 202
    assert first.get_json()["id"] == second.get_json()["id"]
    assert services(app).queue.depth() == 1


def test_get_unknown_plan_is_404_problem(client):
    response = client.get("/v1/plans/0123456789abcdef0123456789abcdef")
    assert response.status_code == 404
    assert response.mimetype == "application/problem+json"
    assert response.get_json()["status"] == 404


def test_list_is_newest_first_with_cursor_paging_and_status_filter(client):
    ids = [client.post("/v1/plans", json=tiny_workload(f"w{i}")).get_json()["id"] for i in range(5)]
    for plan_id in ids[1:3]:
        assert client.delete(f"/v1/plans/{plan_id}").status_code == 200
    seen, cursor, pages = [], None, 0
    while True:
        query = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        page = client.get("/v1/plans", query_string=query).get_json()
        pages += 1
        assert len(page["items"]) <= 2
        assert all("plan" not in item for item in page["items"])
        seen += [item["id"] for item in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == ids[::-1]
    assert pages == 3
    cancelled = client.get("/v1/plans", query_string={"status": "cancelled"}).get_json()
    assert [item["id"] for item in cancelled["items"]] == ids[2:0:-1]
    assert {item["status"] for item in cancelled["items"]} == {"cancelled"}
    queued = client.get("/v1/plans", query_string={"status": "queued", "limit": 100}).get_json()
    assert [item["id"] for item in queued["items"]] == [ids[4], ids[3], ids[0]]
    assert queued["next_cursor"] is None


def test_list_rejects_bad_parameters_with_422_and_the_field(client):
    for query, path in (
        ({"limit": 0}, "limit"),
        ({"limit": "many"}, "limit"),
        ({"status": "done"}, "status"),
        ({"cursor": "not-a-cursor"}, "cursor"),
    ):
        response = client.get("/v1/plans", query_string=query)
        assert response.status_code == 422, query
        assert response.mimetype == "application/problem+json"
        assert [e["path"] for e in response.get_json()["errors"]] == [path], response.get_json()


def test_delete_cancels_a_queued_plan_then_deletes_it(app, client):
    plan_id = client.post("/v1/plans", json=tiny_workload()).get_json()["id"]
    cancelled = client.delete(f"/v1/plans/{plan_id}")
    assert cancelled.status_code == 200
    assert cancelled.get_json()["status"] == "cancelled"
    assert cancelled.get_json()["finished_at"] is not None
    assert services(app).queue.depth() == 0
    assert client.get(f"/v1/plans/{plan_id}").get_json()["status"] == "cancelled"
    assert client.delete(f"/v1/plans/{plan_id}").get_json()["status"] == "cancelled"  # a retry: same answer
    app.config["CANCEL_REPLAY_S"] = 0  # after OPTSCHED_CANCEL_REPLAY_S, a DELETE deletes
    assert client.delete(f"/v1/plans/{plan_id}").status_code == 204
    assert client.get(f"/v1/plans/{plan_id}").status_code == 404
    assert client.delete(f"/v1/plans/{plan_id}").status_code == 404


def test_delete_a_finished_plan_removes_it(live):
    data = tiny_workload("finished")
    finished = live.post("/v1/plans", json=data).get_json()
    assert_verified(data, finished)
    plan_id = finished["id"]
    assert live.delete(f"/v1/plans/{plan_id}").status_code == 204
    assert live.get(f"/v1/plans/{plan_id}").status_code == 404


@pytest.mark.slow
def test_cancel_a_solving_plan_stops_its_worker_and_the_pool_goes_on(live, live_pool):
    slow = slow_workload(time_limit_s=30)
    response = live.post("/v1/plans", json=slow, headers={"Prefer": "respond-async"})
    location = response.headers["Location"]
    deadline = time.monotonic() + 20
    while live.get(location).get_json()["status"] != "solving":
        assert time.monotonic() < deadline, "the plan never started solving"
        time.sleep(0.02)
    [solving_pid] = live_pool.worker_pids()
    cancelled = live.delete(location)
    assert cancelled.status_code == 200
    assert cancelled.get_json()["status"] == "cancelled"
    if cancelled.get_json()["plan"] is not None:  # the best plan the worker streamed before the cancel, kept
        assert_verified(slow, cancelled.get_json())
    data = tiny_workload("after cancel")
    after = live.post("/v1/plans", json=data)
    # 201 when the new worker answers within the sync wait; a busy machine may make it a 202 to follow.
    assert after.status_code in (201, 202)
    body = after.get_json() if after.status_code == 201 else poll(live, after.headers["Location"], timeout_s=120)
    assert body["status"] == "optimal", body["status"]
    assert_verified(data, body)
    assert solving_pid not in live_pool.worker_pids()
    assert live.get(location).get_json()["status"] == "cancelled"  # the killed solve wrote nothing back


def test_full_queue_answers_503_with_retry_after_and_stores_nothing(make_app):
    client = make_app(QUEUE_SIZE=2).test_client()
    accepted = [client.post("/v1/plans", json=tiny_workload()) for _ in range(2)]
    assert [r.status_code for r in accepted] == [202, 202]
    rejected = client.post("/v1/plans", json=tiny_workload(), headers={"Idempotency-Key": "k"})
    assert rejected.status_code == 503
    assert rejected.mimetype == "application/problem+json"
    assert int(rejected.headers["Retry-After"]) >= 1
    assert rejected.get_json()["type"] == "urn:optsched:problem:queue-full"
    assert len(client.get("/v1/plans").get_json()["items"]) == 2
    client.delete(accepted[0].headers["Location"])  # frees a slot; the key was not used up by the 503
    assert client.post("/v1/plans", json=tiny_workload(), headers={"Idempotency-Key": "k"}).status_code == 202
