"""Issue 25, item 2: results expire after OPTSCHED_RESULT_TTL_S (deleted whole by a sweep, never half), and a team
over its storage quota gets 507 while other teams still store."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

from sqlalchemy import update

from api import services
from optsched.infra.retention import RetentionSweeper, expire
from optsched.infra.store import JobState, PlanStore, document_bytes, plans
from optsched.verify.placement import verify
from tests.api.helpers import solve_now, tiny_workload

A_TOKEN, B_TOKEN = "team-a-token-0f3c9b7e21", "team-b-token-6d0a4c8f55"
A = {"Authorization": f"Bearer {A_TOKEN}"}
B = {"Authorization": f"Bearer {B_TOKEN}"}
TEAMS = f"team-a:{A_TOKEN},team-b:{B_TOKEN}"
RESULT = {"status": "optimal", "placements": [], "note": "x" * 1000}


def ended(store: PlanStore, state: JobState, ago_s: float, team: str = "default") -> str:
    """A stored resource that reached `state` `ago_s` seconds ago (finished ones with RESULT)."""
    record, _ = store.create(tiny_workload(), team=team)
    if state is JobState.queued:
        return record.id
    claimed = store.claim(record.id)
    if state is JobState.finished:
        store.finish(record.id, claimed.attempts, state, verdict="optimal", plan=RESULT)
    elif state is not JobState.solving:
        store.finish(record.id, claimed.attempts, state, error="stopped")
    if state.final:
        with store.engine.begin() as c:
            c.execute(update(plans).where(plans.c.id == record.id).values(
                finished_at=datetime.now(UTC) - timedelta(seconds=ago_s)))
    return record.id


def test_expire_deletes_only_what_ended_before_the_time_to_live(tmp_path):
    store = PlanStore(f"sqlite:///{tmp_path}/r.db")
    try:
        old = {state: ended(store, state, 3_600) for state in (JobState.finished, JobState.cancelled, JobState.failed)}
        young = ended(store, JobState.finished, 60)
        running = [ended(store, JobState.queued, 0), ended(store, JobState.solving, 0)]
        assert expire(store, None) == expire(store, 0) == 0  # no time-to-live: everything is kept
        assert expire(store, 600) == 3
        assert all(store.get(i) is None for i in old.values())
        assert store.get(young) is not None and all(store.get(i) is not None for i in running)
        assert expire(store, 600) == 0  # a second sweep (another process) finds nothing to do
    finally:
        store.close()


def test_the_store_counts_each_teams_documents_and_unfinished_resources(tmp_path):
    store = PlanStore(f"sqlite:///{tmp_path}/u.db")
    try:
        done = ended(store, JobState.finished, 10, team="a")
        ended(store, JobState.queued, 0, team="a")
        ended(store, JobState.queued, 0, team="b")
        usage = store.usage("a")
        assert usage.unfinished == 1
        assert usage.stored_bytes == 2 * document_bytes(tiny_workload()) + document_bytes(RESULT)
        assert store.get(done).stored_bytes == document_bytes(tiny_workload()) + document_bytes(RESULT)
        assert abs((datetime.now(UTC) - usage.oldest_finished_at).total_seconds() - 10) < 5
        assert store.usage("nobody").stored_bytes == 0 and store.usage("nobody").oldest_finished_at is None
    finally:
        store.close()


def test_the_sweeper_deletes_whole_resources_while_readers_read_them(tmp_path):
    store = PlanStore(f"sqlite:///{tmp_path}/s.db")
    ids = [ended(store, JobState.finished, 7_200) for _ in range(60)]
    kept = ended(store, JobState.finished, 1)
    seen: list[object] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            for resource_id in ids:
                record = store.get(resource_id)
                seen.append(None if record is None else (record.status, record.plan == RESULT, record.workload))

    reader = threading.Thread(target=read)
    reader.start()
    sweeper = RetentionSweeper(store, ttl_s=3_600, interval_s=0.05)
    sweeper.start()
    try:
        deadline = time.monotonic() + 10
        while any(store.get(i) is not None for i in ids) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        sweeper.stop()
        stop.set()
        reader.join()
        assert all(store.get(i) is None for i in ids) and store.get(kept) is not None
        store.close()
    # Every read saw the resource whole (finished, with its result and workload) or not at all.
    assert seen and all(s is None or (s[0] is JobState.finished and s[1] and s[2] == tiny_workload()) for s in seen)


def test_a_team_over_its_quota_gets_507_while_other_teams_still_store(make_app):
    app = make_app(API_TOKENS=TEAMS, RESULT_TTL_S=3_600)
    client = app.test_client()
    store = services(app).store
    first = client.post("/v1/plans", json=tiny_workload(), headers=A | {"Idempotency-Key": "k1"}).get_json()["id"]
    assert verify(tiny_workload(), solve_now(app, first)) == []
    used = store.usage("team-a").stored_bytes
    each = document_bytes(tiny_workload(), {})
    assert used > 2 * each  # the result is counted with the workload
    app.config["TEAM_QUOTA_MB"] = (used + 2 * each - 1) / 2**20  # room for two more tiny workloads, not three
    codes = [client.post("/v1/plans", json=tiny_workload(), headers=A).status_code for _ in range(3)]
    assert codes == [202, 202, 507]
    full = client.post("/v1/plans", json=tiny_workload(), headers=A)
    body = full.get_json()
    assert full.status_code == 507 and body["type"] == "urn:optsched:problem:quota-exceeded"
    assert "team-a" in body["detail"] and "OPTSCHED_TEAM_QUOTA_MB" in body["detail"]
    assert 3_500 <= int(full.headers["Retry-After"]) <= 3_601  # when the oldest result expires
    replay = client.post("/v1/plans", json=tiny_workload(), headers=A | {"Idempotency-Key": "k1"})
    assert replay.status_code == 201 and replay.headers["Idempotent-Replayed"] == "true"  # retries still answered
    assert client.post("/v1/plans", json=tiny_workload(), headers=B).status_code == 202  # b has its own quota
    assert client.delete(f"/v1/plans/{first}", headers=A).status_code == 204  # deleting frees room
    assert client.post("/v1/plans", json=tiny_workload(), headers=A).status_code == 202
