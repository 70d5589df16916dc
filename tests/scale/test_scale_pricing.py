"""Column generation's pricing fanned out to RQ workers (optsched.infra.rq.pricing): the workers' columns are the
ones this process finds, a solve never waits on a chunk nobody took (workers that never take a job, a worker that
claims a chunk and never answers), and a solve priced on real `optsched worker`s gives a verified plan."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace

import numpy as np
import pytest
from rq import Queue, Worker
from rq.job import Job
from rq.serializers import JSONSerializer
from rq.worker import WorkerStatus

from optsched.infra.rq import pricing as rq_pricing
from optsched.infra.rq.keys import Keys
from optsched.infra.rq.pricing import RQPricing, pricing_queue_name
from optsched.model.data import ModelData
from optsched.model.objectives import OBJECTIVES
from optsched.schema.plan import Status
from optsched.solve.columns import ColumnMaster, Controls, Pricing
from optsched.solve.columns.fanout import FAN_OUT_MIN_BLOCKS
from optsched.solve.columns.pricing import HOSTS_PRICED
from optsched.solve.construct import construct
from optsched.solve.extract import extract
from optsched.testing.instances import generate_racks
from optsched.verify.placement import verify
from tests.support.columns import run_columns

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def round_at_duals():
    """A 1,000-job master after its first LP, and what full pricing at its duals asks: (pricing, blocks, sigma, pi,
    the columns found in this process)."""
    data = ModelData(generate_racks("L", 0))
    master = ColumnMaster(data)
    pricing = Pricing(master)
    master.add_counts(construct(data))
    rng = np.random.default_rng(0)
    pricing.seed(rng.uniform(0.0, 0.5, len(data.groups)), rng.uniform(0.0, 1e-3, len(master.headroom)))
    _, sigma, mu, lam = master.solve_lp(time.monotonic() + 60.0)
    pi = master.level_prices(mu, lam)
    blocks = pricing._blocks(np.flatnonzero(master.row >= 0))
    assert len(blocks) >= FAN_OUT_MIN_BLOCKS
    here = [pricing.blocks.price_block(b, sigma, pi) for b in blocks]
    assert sum(map(len, here)) > 0, "the round found no column: the test needs some"
    return pricing, blocks, sigma, pi, here


def _slowly(pricing: Pricing, sigma, pi, pause_s: float, hosts: int | None = HOSTS_PRICED):
    """This process's pricing of a block, `pause_s` slower: the workers get time to take their chunks."""

    def local(block):
        time.sleep(pause_s)
        return pricing.blocks.price_block(block, sigma, pi, hosts)

    return local


def test_workers_price_chunks_and_return_the_same_columns(workers, redis_url, queue_name, round_at_duals):
    pricing, blocks, sigma, pi, here = round_at_duals
    session = RQPricing(Keys(redis_url, queue_name)).open(pricing.a, pricing.hosts)
    try:
        fanned = session.price(blocks, sigma, pi, _slowly(pricing, sigma, pi, 0.3))
    finally:
        session.close()
    assert fanned == here
    assert session.stats.chunks_by_workers >= 1  # two idle workers: they take theirs while this one sleeps
    assert session.stats.chunks_by_workers + session.stats.chunks_here == 3 and session.stats.stragglers == 0
    assert Keys(redis_url, queue_name).redis.get(f"{session.prefix}:arrays") is None  # closed: nothing left


def test_workers_price_with_the_hosts_the_session_was_opened_with(workers, redis_url, queue_name, round_at_duals):
    pricing, blocks, *_ = round_at_duals
    master = pricing.master
    # Prices at random: at the LP's first duals one host is the whole frontier, and the hosts change nothing.
    rng = np.random.default_rng(1)
    pi = master.level_prices(rng.uniform(0.0, 2.0, master.groups), rng.uniform(0.0, 1e-2, master.budget_rows))
    sigma = rng.uniform(0.0, 1.0, master.jobs) * master.a.weight
    one_host = [pricing.blocks.price_block(b, sigma, pi, 1) for b in blocks]
    assert one_host != [pricing.blocks.price_block(b, sigma, pi, None) for b in blocks], "the test needs a difference"
    session = RQPricing(Keys(redis_url, queue_name)).open(pricing.a, 1)
    try:
        fanned = session.price(blocks, sigma, pi, _slowly(pricing, sigma, pi, 0.3, 1))
    finally:
        session.close()
    assert fanned == one_host and session.stats.chunks_by_workers >= 1

def test_registered_workers_that_take_nothing_keep_no_solve_waiting(redis_url, private_queue, round_at_duals):
    """Workers that all solve (here: registered, never working) take no chunk: the solve prices all of them at
    once instead of waiting on any."""
    pricing, blocks, sigma, pi, here = round_at_duals
    keys = Keys(redis_url, private_queue)
    idle = [Worker([Queue(pricing_queue_name(private_queue), connection=keys.redis, serializer=JSONSerializer)],
                   connection=keys.redis, name=f"busy-{private_queue}-{i}") for i in range(2)]
    for w in idle:
        w.register_birth()
        w.set_state(WorkerStatus.IDLE)  # idle by their word: the solve counts on them, and they never come
    session = RQPricing(keys, straggler_s=120.0).open(pricing.a, pricing.hosts)
    started = time.monotonic()
    try:
        fanned = session.price(blocks, sigma, pi, lambda b: pricing.blocks.price_block(b, sigma, pi))
    finally:
        session.close()
        for w in idle:
            w.register_death()
    assert fanned == here
    assert session.stats.chunks_here == 3 and session.stats.chunks_by_workers == 0
    assert time.monotonic() - started < 60.0  # it never waited for the 120 s a worker's chunk may take
    assert keys.redis.llen(f"rq:queue:{pricing_queue_name(private_queue)}") == 0  # chunks it took left the queue


@contextmanager
def _worker_taking_one_chunk(keys: Keys, queue_name: str, fails: bool) -> Iterator[None]:
    """An idle worker of the pricing queue that claims the first chunk it sees, then dies silently (`fails` False)
    or answers with nothing, as `price_chunk` does when its chunk raised (`fails` True)."""
    queue = Queue(pricing_queue_name(queue_name), connection=keys.redis, serializer=JSONSerializer)
    worker = Worker([queue], connection=keys.redis, name=f"one-chunk-{queue_name}")
    worker.register_birth()
    worker.set_state(WorkerStatus.IDLE)

    def take() -> None:
        got = keys.redis.blpop([queue.key], timeout=30)
        if got is None:
            return
        prefix, round_, chunk, _ = Job.fetch(got[1].decode(), connection=keys.redis, serializer=JSONSerializer).args
        if keys.redis.set(f"{prefix}:{round_}:claim:{chunk}", "worker", nx=True, ex=60) and fails:
            keys.redis.rpush(f"{prefix}:{round_}:answers", f"[{chunk}, null]")

    thread = threading.Thread(target=take, daemon=True)
    thread.start()
    try:
        yield
    finally:
        worker.register_death()


def _price_beside(keys: Keys, round_at_duals, fails: bool, straggler_s: float):
    """One round fanned out beside `_worker_taking_one_chunk`: (columns, stats, seconds)."""
    pricing, blocks, sigma, pi, _ = round_at_duals
    with _worker_taking_one_chunk(keys, keys.queue_name, fails):
        session = RQPricing(keys, straggler_s=straggler_s).open(pricing.a, pricing.hosts)
        started = time.monotonic()
        try:
            fanned = session.price(blocks, sigma, pi, _slowly(pricing, sigma, pi, 0.2))
        finally:
            session.close()
    return fanned, session.stats, time.monotonic() - started


def test_a_chunk_claimed_and_never_answered_is_priced_after_the_straggler_wait(redis_url, private_queue,
                                                                              round_at_duals):
    fanned, stats, _ = _price_beside(Keys(redis_url, private_queue), round_at_duals, fails=False, straggler_s=1.0)
    assert fanned == round_at_duals[-1]
    assert stats.stragglers == 1 and stats.chunks_here == 1  # 2 chunks: one worker + this one


def test_a_chunk_a_worker_failed_on_is_priced_without_waiting(redis_url, private_queue, round_at_duals):
    fanned, stats, seconds = _price_beside(Keys(redis_url, private_queue), round_at_duals, fails=True,
                                           straggler_s=120.0)
    assert fanned == round_at_duals[-1]
    assert stats.stragglers == 1 and stats.chunks_here == 1
    assert seconds < 60.0  # not the 120 s a silent worker's chunk may take


def test_a_worker_failing_on_its_chunk_answers_so(redis_url, private_queue, round_at_duals, monkeypatch):
    """A worker whose session is gone (closed, expired) still answers, with nothing: the solve prices the chunk
    at once instead of waiting."""
    pricing, blocks, sigma, pi, _ = round_at_duals
    keys = Keys(redis_url, private_queue)
    monkeypatch.setattr(rq_pricing, "require_context", lambda: SimpleNamespace(keys=keys))
    monkeypatch.setattr(rq_pricing, "_cached", None)
    prefix = f"optsched:{private_queue}:pricing:gone"
    keys.redis.set(f"{prefix}:1:duals", rq_pricing._pack({"sigma": sigma, "pi": pi}), ex=60)
    with pytest.raises(LookupError, match="closed"):
        rq_pricing.price_chunk(prefix, 1, 0, [blocks[0].tolist()])
    assert keys.redis.lpop(f"{prefix}:1:answers") == b"[0, null]"
    assert rq_pricing.price_chunk(prefix, 1, 0, [blocks[0].tolist()]) == "skipped: already claimed"
    keys.redis.delete(f"{prefix}:1:duals")
    assert rq_pricing.price_chunk(prefix, 1, 1, [blocks[1].tolist()]) == "skipped: the round is over"


def test_columns_priced_on_workers_give_a_verified_plan(workers, redis_url, queue_name, monkeypatch):
    w = generate_racks("L", 1)
    # Every round fans out, however few of the 1,000 jobs it prices.
    monkeypatch.setattr("optsched.solve.columns.pricing.FAN_OUT_MIN_BLOCKS", 2)
    fan_out = RQPricing(Keys(redis_url, queue_name))
    data, stats, plans, bounds, value = run_columns(w, Controls(partial=0, fan_out=fan_out), gap=0.01, seconds=10.0)
    assert fan_out.stats.rounds >= 1
    assert stats.rounds >= 1 and min(bounds) >= value * (1 - 1e-9)
    objective = OBJECTIVES["weighted_speedup"]
    for counts in plans:
        assert verify(w, extract(data, objective, counts, Status.heuristic, None, (), time.monotonic(), 0)) == []


def test_a_solve_prices_its_rounds_itself_while_redis_does_not_answer(round_at_duals):
    """A solve needs no Redis to finish: with none answering, every round is priced here, the same columns."""
    pricing, blocks, sigma, pi, here = round_at_duals
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    fan_out = RQPricing(Keys(f"redis://127.0.0.1:{port}/0", "nowhere"))
    session = fan_out.open(pricing.a, pricing.hosts)
    assert session.price(blocks, sigma, pi, lambda b: pricing.blocks.price_block(b, sigma, pi)) == here
    session.close()
    assert fan_out.away and fan_out.stats.outages == 1 and fan_out.stats.rounds == 0 and fan_out.width() == 1


def test_a_worker_busy_solving_takes_no_share_of_the_rounds(redis_url, private_queue):
    """Partial pricing asks each pricing process for its share: a worker busy solving (the solve's own) is none."""
    keys = Keys(redis_url, private_queue)
    queue = Queue(pricing_queue_name(private_queue), connection=keys.redis, serializer=JSONSerializer)
    workers = [Worker([queue], connection=keys.redis, name=f"w{i}-{private_queue}") for i in range(3)]
    try:
        for w, state in zip(workers, (WorkerStatus.BUSY, WorkerStatus.IDLE, WorkerStatus.IDLE), strict=True):
            w.register_birth()
            w.set_state(state)
        assert RQPricing(keys).width() == 3
    finally:
        for w in workers:
            w.register_death()
