"""The worker pool: overrunning solves are killed, crashed workers are retried then failed, workers are recycled."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import update

from optsched.infra.pool import ProcessPool
from optsched.infra.queue import QueueFull
from optsched.infra.store import MAX_ATTEMPTS, JobState, PlanStore, plans
from optsched.service.kinds import runner, solve_task
from optsched.verify.placement import verify
from tests.api import fakes
from tests.api.helpers import tiny_workload

pytestmark = pytest.mark.slow  # solver worker processes killed, replaced and recycled


@pytest.fixture
def store(tmp_path):
    s = PlanStore(f"sqlite:///{tmp_path}/plans.db")
    yield s
    s.close()


@pytest.fixture
def make_pool(store):
    pools: list[ProcessPool] = []

    def make(**kwargs) -> ProcessPool:
        solve = kwargs.pop("solve", solve_task)
        pool = ProcessPool(store, **{"workers": 1, "runner": runner(solve), **kwargs})
        pools.append(pool)
        return pool

    yield make
    for pool in pools:
        pool.stop()


def submit(store, pool, data) -> str:
    record, _ = store.create(data)
    pool.submit(record.id)
    return record.id


def test_a_solve_past_its_time_limit_and_grace_is_killed_and_recorded_no_solution(store, make_pool):
    pool = make_pool(solve=fakes.sleep_forever, grace_s=0.3)
    pool.start()
    plan_id = submit(store, pool, tiny_workload(time_limit_s=0.2))
    record = pool.wait(plan_id, 20)
    assert record.outcome == "no_solution"
    assert "overran its time limit of 0.2 s" in record.error
    assert record.finished_at - record.started_at >= timedelta(seconds=0.5)


def test_a_killed_solve_keeps_its_incumbent_shown_while_solving_and_ends_time_limit(store, make_pool):
    pool = make_pool(solve=fakes.incumbent_then_sleep, grace_s=1.0)
    pool.start()
    data = tiny_workload(time_limit_s=1.0)
    plan_id = submit(store, pool, data)
    deadline = time.monotonic() + 30
    record = store.get(plan_id)
    while record.plan is None and time.monotonic() < deadline:
        time.sleep(0.05)
        record = store.get(plan_id)
    assert record.status == JobState.solving and record.plan["status"] == "time_limit"
    assert verify(data, record.plan) == []
    record = pool.wait(plan_id, 30)
    assert record.outcome == "time_limit"
    assert "overran its time limit of 1 s" in record.error
    assert verify(data, record.plan) == []


def test_a_worker_that_dies_is_replaced_and_its_plan_retried_then_failed(store, make_pool):
    pool = make_pool(solve=fakes.crash)
    pool.start()
    plan_id = submit(store, pool, tiny_workload())
    record = pool.wait(plan_id, 30)
    assert record.status == JobState.failed
    assert record.attempts == MAX_ATTEMPTS
    assert "died" in record.error
    assert pool.healthy()


def test_workers_are_recycled_after_max_solves_and_every_plan_verifies(store, make_pool):
    pool = make_pool(max_solves_per_worker=2)
    pool.start()
    for i in range(3):
        data = tiny_workload(f"r{i}")
        record = pool.wait(submit(store, pool, data), 30)
        assert record.outcome == "optimal"
        assert verify(data, record.plan) == []
    assert pool.spawned == 2  # the first worker retired after its second solve


def test_submit_beyond_the_bound_raises_queue_full(store, make_pool):
    pool = make_pool(queue_size=2)  # not started: nothing leaves the queue
    for _ in range(2):
        submit(store, pool, {})
    with pytest.raises(QueueFull) as caught:
        submit(store, pool, {})
    assert caught.value.retry_after_s >= 1


def test_start_requeues_what_a_previous_run_left(store, make_pool):
    data = tiny_workload("left behind")
    queued = store.create(data)[0].id
    solving = store.create(data)[0].id
    store.claim(solving)
    pool = make_pool()
    pool.start()
    for plan_id in (queued, solving):
        record = pool.wait(plan_id, 30)
        assert record.outcome == "optimal"
        assert verify(data, record.plan) == []


def test_the_sweep_adopts_plans_that_no_process_owns(store, make_pool):
    pool = make_pool()
    orphan_queued = store.create(tiny_workload())[0].id
    orphan_solving = store.create(tiny_workload())[0].id
    store.claim(orphan_solving)
    long_ago = datetime.now(UTC) - timedelta(hours=1)
    with store.engine.begin() as c:
        c.execute(update(plans).where(plans.c.id == orphan_solving).values(started_at=long_ago))
    fresh_solving = store.create(tiny_workload())[0].id
    store.claim(fresh_solving)  # may still belong to a live process: left alone
    pool._next_sweep = 0.0
    pool._sweep()
    assert sorted(pool._queue) == sorted([orphan_queued, orphan_solving])
    assert store.get(orphan_solving).status == JobState.queued
    assert store.get(fresh_solving).status == JobState.solving
