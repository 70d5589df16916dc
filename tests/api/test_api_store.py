"""The plan store: private SQLite file in WAL mode, conditional state changes, claim tokens, recovery, paging."""

from __future__ import annotations

import stat

import pytest
from sqlalchemy import text

from optsched.infra.store import MAX_ATTEMPTS, InvalidCursor, JobState, PlanStore


@pytest.fixture
def store(tmp_path):
    s = PlanStore(f"sqlite:///{tmp_path}/var/plans.db")
    yield s
    s.close()


def test_sqlite_file_is_private_and_in_wal_mode(store, tmp_path):
    path = tmp_path / "var" / "plans.db"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with store.engine.connect() as c:
        assert c.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert c.execute(text("PRAGMA busy_timeout")).scalar() >= 1000


def test_only_queued_and_solving_are_unfinished():
    assert {s for s in JobState if not s.final} == {JobState.queued, JobState.solving}


def test_lifecycle_queued_solving_finished(store):
    record, created = store.create({"name": "w"})
    assert created and record.status == JobState.queued and record.attempts == 0
    claimed = store.claim(record.id)
    assert claimed.status == JobState.solving and claimed.attempts == 1 and claimed.started_at is not None
    assert store.claim(record.id) is None  # only queued plans can be claimed
    assert store.finish(record.id, 1, JobState.finished, verdict="optimal", plan={"status": "optimal"})
    done = store.get(record.id)
    assert done.outcome == "optimal" and done.plan == {"status": "optimal"} and done.finished_at
    assert done.workload == {"name": "w"}
    assert not store.cancel(record.id)[1]  # a finished plan is not cancelled
    with pytest.raises(ValueError):
        store.finish(record.id, 1, JobState.queued)


def test_a_stale_claim_cannot_finish_or_requeue(store):
    record, _ = store.create({})
    store.claim(record.id)
    assert store.requeue(record.id, 1)
    store.claim(record.id)  # attempt 2
    assert not store.finish(record.id, 1, JobState.finished, verdict="optimal")
    assert not store.requeue(record.id, 1)
    assert store.finish(record.id, 2, JobState.finished, verdict="time_limit")


def test_cancel_wins_over_a_finishing_solve(store):
    record, _ = store.create({})
    store.claim(record.id)
    cancelled, changed = store.cancel(record.id)
    assert changed and cancelled.status == JobState.cancelled
    assert not store.finish(record.id, 1, JobState.finished, verdict="optimal", plan={})
    assert store.get(record.id).plan is None


def test_idempotency_key_returns_the_first_plan(store):
    first, created = store.create({"a": 1}, "key")
    again, created_again = store.create({"a": 2}, "key")
    assert created and not created_again
    assert again.id == first.id and again.workload == {"a": 1}


def test_recover_requeues_interrupted_plans_and_gives_up_after_max_attempts(store):
    queued, _ = store.create({})
    solving, _ = store.create({})
    stubborn, _ = store.create({})
    store.claim(solving.id)
    for _ in range(MAX_ATTEMPTS):
        store.claim(stubborn.id)
        store.requeue(stubborn.id, store.get(stubborn.id).attempts)
    store.claim(stubborn.id)
    ids = store.recover(max_attempts=MAX_ATTEMPTS + 1)
    assert ids == [queued.id, solving.id]
    assert store.get(solving.id).status == JobState.queued
    failed = store.get(stubborn.id)
    assert failed.status == JobState.failed and "interrupted" in failed.error


def test_delete_only_removes_finished_plans(store):
    record, _ = store.create({})
    assert not store.delete(record.id)
    store.cancel(record.id)
    assert store.delete(record.id)
    assert store.get(record.id) is None


def test_list_pages_newest_first_and_rejects_foreign_cursors(store):
    ids = [store.create({})[0].id for _ in range(7)]
    seen, cursor = [], None
    while True:
        page, cursor = store.list(limit=3, cursor=cursor)
        seen += [r.id for r in page]
        assert all(r.workload is None and r.plan is None for r in page)
        if cursor is None:
            break
    assert seen == ids[::-1]
    store.cancel(ids[3])
    assert [r.id for r in store.list(status=JobState.cancelled)[0]] == [ids[3]]
    for bad in ("", "abc", "bm9wZQ", "MjAyNi0xMS0zMHxhYmM"):
        with pytest.raises(InvalidCursor):
            store.list(cursor=bad)
