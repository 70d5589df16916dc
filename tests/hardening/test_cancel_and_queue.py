"""Cancel is idempotent: concurrent or racing DELETEs of an unfinished resource all answer 200 `cancelled` and
none deletes it; only a resource final before the request is deleted. With Redis, the queue bound holds under
concurrent submits (one transaction counts and enqueues)."""

from __future__ import annotations

import copy
import os
import socket
import threading
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from api.examples import WORKLOAD
from optsched.infra.queue import QueueFull
from optsched.infra.store import JobState, PlanStore
from optsched.service.kinds import KINDS, RUNNER
from optsched.service.resources import cancel_or_delete


def _concurrently(n: int, call) -> list:
    barrier = threading.Barrier(n)
    results: list = [None] * n

    def run(i: int) -> None:
        barrier.wait()
        results[i] = call()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return results


@pytest.mark.parametrize("state", ["queued", "solving"])
def test_concurrent_deletes_of_an_unfinished_plan_all_answer_200_cancelled(make_app, state):
    app = make_app()
    store = app.extensions["optsched"].store
    for _ in range(5):  # races differ from run to run: several rounds
        plan_id = app.test_client().post("/v1/plans", json=copy.deepcopy(WORKLOAD)).get_json()["id"]
        if state == "solving":
            assert store.claim(plan_id) is not None
        responses = _concurrently(3, lambda plan_id=plan_id: app.test_client().delete(f"/v1/plans/{plan_id}"))
        assert [r.status_code for r in responses] == [200, 200, 200]
        assert {r.get_json()["status"] for r in responses} == {"cancelled"}
        assert store.get(plan_id).status == JobState.cancelled  # none of them deleted it
        retried = app.test_client().delete(f"/v1/plans/{plan_id}")  # a retry soon after: the same answer
        assert retried.status_code == 200 and retried.get_json()["status"] == "cancelled"
        app.config["CANCEL_REPLAY_S"] = 0  # past the replay window, a DELETE deletes
        assert app.test_client().delete(f"/v1/plans/{plan_id}").status_code == 204
        assert app.test_client().get(f"/v1/plans/{plan_id}").status_code == 404
        app.config["CANCEL_REPLAY_S"] = 30


def test_a_delete_that_arrived_before_the_cancel_committed_does_not_delete(tmp_path):
    """The race the threads above can hit: a second DELETE arrives while the first is cancelling, and reads the
    row once it is cancelled. Deleting it then would answer 204 and destroy what the first one returned."""
    store = PlanStore(f"sqlite:///{tmp_path}/plans.db")

    class Queue:
        def cancel(self, plan_id):
            return store.cancel(plan_id)[0]

    record, _ = store.create(copy.deepcopy(WORKLOAD))
    arrived = datetime.now(UTC)
    first = cancel_or_delete(store, Queue(), KINDS["plan"], record.id, requested_at=arrived)
    assert first.status == JobState.cancelled
    second = cancel_or_delete(store, Queue(), KINDS["plan"], record.id, requested_at=arrived)
    assert second is not None and second.status == JobState.cancelled and store.get(record.id) is not None
    later = datetime.now(UTC) + timedelta(milliseconds=1)
    again = cancel_or_delete(store, Queue(), KINDS["plan"], record.id, requested_at=later, replay_s=30)
    assert again.status == JobState.cancelled  # a retry within the replay window
    assert cancel_or_delete(store, Queue(), KINDS["plan"], record.id, requested_at=later) is None
    assert store.get(record.id) is None
    store.close()


def _redis_listening() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=1.0):
            return True
    except OSError:
        return False


@pytest.mark.skipif(not _redis_listening(), reason="no Redis on 127.0.0.1:6379 (README: Starting PostgreSQL and Redis)")
def test_the_redis_queue_bound_is_exact_under_16_concurrent_submits(tmp_path):
    from optsched.infra.rq.queue import RQQueue

    db = int(os.environ.get("OPTSCHED_TEST_REDIS_DB", "15"))
    name = f"hardening-{uuid.uuid4().hex[:10]}"
    store = PlanStore(f"sqlite:///{tmp_path}/plans.db")
    queue = RQQueue(store, f"redis://127.0.0.1:6379/{db}", runner=RUNNER, queue_name=name, queue_size=3)
    try:
        ids = [store.create(copy.deepcopy(WORKLOAD))[0].id for _ in range(16)]
        results = _concurrently(16, _submitter(queue, ids))
        assert sorted(results).count("enqueued") == 3 and sorted(results).count("full") == 13, results
        assert queue.depth() == 3
    finally:
        keys = queue.keys.redis.keys(f"rq:*{name}*") + queue.keys.redis.keys(f"optsched:{name}:*")
        for job in queue.keys.queue.get_job_ids():
            keys += queue.keys.redis.keys(f"rq:job:{job}*")
        if keys:
            queue.keys.redis.delete(*keys)
        queue.keys.redis.srem("rq:queues", queue.keys.queue.key)
        queue.stop()
        store.close()


def _submitter(queue, ids: list[str]):
    lock = threading.Lock()
    pending = list(ids)

    def submit() -> str:
        with lock:
            plan_id = pending.pop()
        try:
            queue.submit(plan_id)
            return "enqueued"
        except QueueFull:
            return "full"

    return submit
