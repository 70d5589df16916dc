"""Issue 25: a result larger than OPTSCHED_MAX_RESULT_MB is not stored; the resource fails saying why (a 2 KB
queueing study stored an 18.6 MB front), and nothing of the result is written."""

from __future__ import annotations

from api.examples import WORKLOAD
from optsched.infra.queue import SolveTask, record_outcome
from optsched.infra.store import JobState, PlanStore
from optsched.service.kinds import result_too_large, solve_task


def test_a_result_above_the_limit_fails_with_the_reason_and_stores_nothing(monkeypatch, tmp_path):
    task = SolveTask(kind="plan", workload=WORKLOAD)
    outcome, payload = solve_task(task)
    assert outcome == "result"  # within the default limit
    size_mb = len(str(payload[1])) / 1e6
    monkeypatch.setenv("OPTSCHED_MAX_RESULT_MB", f"{size_mb / 4:.6f}")
    outcome, payload = solve_task(task)
    assert outcome == "error" and "OPTSCHED_MAX_RESULT_MB" in payload and "not stored" in payload

    store = PlanStore(f"sqlite:///{tmp_path}/plans.db")
    try:
        record, _ = store.create(WORKLOAD, kind="plan", params={})
        claimed = store.claim(record.id)
        assert record_outcome(store, record.id, claimed.attempts, outcome, payload) is JobState.failed
        stored = store.get(record.id)
        assert stored.status is JobState.failed and stored.plan is None
        assert "OPTSCHED_MAX_RESULT_MB" in stored.error
    finally:
        store.close()


def test_the_size_is_that_of_the_json_in_bytes():
    document = {"ids": ["é" * 10] * 100}  # 2 bytes per "é" in UTF-8
    assert result_too_large(document, 0.003) is None
    why = result_too_large(document, 0.002, "queueing study")
    assert why is not None and why.startswith("the queueing study's result is 2,3")  # 2,3xx bytes
    assert "above the limit of 0.002 MB (OPTSCHED_MAX_RESULT_MB)" in why
