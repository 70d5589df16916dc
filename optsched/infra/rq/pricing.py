"""Column generation's pricing rounds on RQ workers (the fan-out of optsched.solve.columns.fanout).

A solve on the queue publishes its workload's arrays once and each round's duals, and splits the round's blocks of
jobs into chunks, one RQ job each, on the pricing queue (the workers take it before solves). A chunk is priced once:
whoever claims it first (SET NX) prices it, a worker running its job or the solve itself. The solve prices every
chunk still unclaimed, last first (workers take the first first), then waits for the chunks workers are pricing,
at most STRAGGLER_S before pricing them as well. So a solve never waits on a chunk nobody started: solves on
workers that all solve price their own rounds, and none waits on another. Arrays and duals travel as NumPy's
binary format (no pickle) and columns as JSON integers: the columns are the same wherever a chunk is priced.
A solve needs no Redis to finish: when Redis stops answering, its rounds are priced in its own process from then on.
"""

from __future__ import annotations

import dataclasses
import io
import json
import logging
import time
import uuid
from dataclasses import dataclass

import numpy as np
from redis import Redis
from rq import Queue, Worker
from rq.serializers import JSONSerializer
from rq.worker import WorkerStatus

from optsched.infra.rq.context import require_context
from optsched.infra.rq.keys import QUEUE_OUTAGES, Keys
from optsched.model.data import Arrays
from optsched.solve.columns.fanout import PriceBlock, shares
from optsched.solve.columns.master import Column
from optsched.solve.columns.pricing import BlockPricer

log = logging.getLogger(__name__)

# The job function by the name queued jobs carry (the package's re-export, as for solves).
PRICE_FUNCTION = "optsched.infra.rq.price_chunk"
# A session's keys expire after this long even when its solve died without closing it.
SESSION_TTL_S = 3600
# Claims outlive their round so that a chunk's job taken late finds its chunk claimed and returns.
CLAIM_TTL_S = 600
# The solve prices a chunk a worker claimed but has not answered after this long (a worker died, or is slow).
STRAGGLER_S = 10.0
# The idle workers are counted at most this often (a round asks twice: for its segments and for its chunks).
WIDTH_TTL_S = 1.0
# A pricing job waiting longer than this on the queue is dropped by RQ (its round is long over); one running longer
# than PRICE_JOB_TIMEOUT_S is stopped (a chunk takes seconds; the solve has priced it itself long before).
PRICE_JOB_TTL_S = 120
PRICE_JOB_TIMEOUT_S = 300


def pricing_queue_name(queue_name: str) -> str:
    return f"{queue_name}-pricing"


@dataclass
class PricingStats:
    """Where the chunks of a fan-out's sessions were priced (for the benchmark and the tests)."""

    rounds: int = 0
    chunks_by_workers: int = 0
    chunks_here: int = 0
    stragglers: int = 0  # chunks a worker claimed that the solve priced after STRAGGLER_S
    outages: int = 0  # Redis stopped answering: every round since was priced by the solve alone


class RQPricing:
    """The fan-out over RQ for solves in this process: `open` publishes a workload's arrays."""

    def __init__(self, keys: Keys, straggler_s: float = STRAGGLER_S):
        self.keys = keys
        self.straggler_s = straggler_s
        self.queue = Queue(pricing_queue_name(keys.queue_name), connection=keys.redis, serializer=JSONSerializer)
        self.stats = PricingStats()
        self.away = False  # Redis stopped answering once: no more fanning out for this solve
        self._counted: tuple[float, int] | None = None  # (when, width)

    def width(self) -> int:
        """The idle workers of the pricing queue and this process: a worker busy solving (this solve's own among
        them) would only leave its chunk to this process."""
        if self.away:
            return 1
        if self._counted is not None and time.monotonic() - self._counted[0] < WIDTH_TTL_S:
            return self._counted[1]
        try:
            workers = Worker.all(connection=self.keys.redis, queue=self.queue, serializer=JSONSerializer)
        except QUEUE_OUTAGES as exc:
            self.went_away(exc)
            return 1
        self._counted = (time.monotonic(), sum(w.get_state() == WorkerStatus.IDLE for w in workers) + 1)
        return self._counted[1]

    def went_away(self, exc: Exception) -> None:
        if not self.away:
            log.warning("pricing rounds stay in this process: Redis does not answer (%s)", type(exc).__name__)
        self.away = True
        self.stats.outages += 1

    def open(self, a: Arrays, hosts: int | None) -> RQPricingSession:
        prefix = f"optsched:{self.keys.queue_name}:pricing:{uuid.uuid4().hex}"
        try:
            self.keys.redis.set(f"{prefix}:arrays", _pack(_fields(a)), ex=SESSION_TTL_S)
        except QUEUE_OUTAGES as exc:
            self.went_away(exc)
        return RQPricingSession(self, prefix, hosts)


class RQPricingSession:
    def __init__(self, fan_out: RQPricing, prefix: str, hosts: int | None):
        self.fan_out = fan_out
        self.hosts = hosts
        self.redis: Redis = fan_out.keys.redis
        self.stats = fan_out.stats  # the fan-out's totals, over its sessions
        self.prefix = prefix
        self.rounds = 0

    def price(
        self, blocks: list[np.ndarray], sigma: np.ndarray, pi: np.ndarray, local: PriceBlock
    ) -> list[list[tuple[int, Column]]]:
        width = self.fan_out.width()
        if width > 1:  # a worker is idle
            try:
                return self._fan_out(blocks, sigma, pi, local, width)
            except QUEUE_OUTAGES as exc:
                self.fan_out.went_away(exc)
        return [local(block) for block in blocks]

    def _fan_out(
        self, blocks: list[np.ndarray], sigma: np.ndarray, pi: np.ndarray, local: PriceBlock, width: int
    ) -> list[list[tuple[int, Column]]]:
        self.rounds += 1
        self.stats.rounds += 1
        round_key = f"{self.prefix}:{self.rounds}"
        # One chunk for each idle worker and one for this process: no worker is kept waiting for another's chunk.
        chunks = shares(len(blocks), width)
        hosts = np.array([0 if self.hosts is None else self.hosts])  # 0: every host
        self.redis.set(f"{round_key}:duals", _pack({"sigma": sigma, "pi": pi, "hosts": hosts}), ex=SESSION_TTL_S)
        job_ids = [f"{round_key.replace(':', '-')}-{i}" for i in range(len(chunks))]
        self.fan_out.queue.enqueue_many([
            Queue.prepare_data(
                PRICE_FUNCTION, args=(self.prefix, self.rounds, i, [blocks[b].tolist() for b in chunk]),
                job_id=job_ids[i], timeout=PRICE_JOB_TIMEOUT_S, ttl=PRICE_JOB_TTL_S, result_ttl=0, failure_ttl=600,
                description=f"pricing round {self.rounds} chunk {i}",
            )
            for i, chunk in enumerate(chunks)
        ])
        answers: list[list[list[tuple[int, Column]]] | None] = [None] * len(chunks)
        for i in reversed(range(len(chunks))):
            if self.redis.set(_claim_key(round_key, i), "solve", nx=True, ex=CLAIM_TTL_S):
                answers[i] = [local(blocks[b]) for b in chunks[i]]
                self.stats.chunks_here += 1
                self.fan_out.queue.remove(job_ids[i])  # nobody need take it off the queue to find it claimed
        self._collect(round_key, answers)
        for i, answer in enumerate(answers):
            if answer is None:  # claimed by a worker that did not answer in time, or failed
                self.stats.stragglers += 1
                answers[i] = [local(blocks[b]) for b in chunks[i]]
        self.redis.delete(f"{round_key}:duals", f"{round_key}:answers")
        return [found for answer in answers if answer is not None for found in answer]

    def _collect(self, round_key: str, answers: list[list[list[tuple[int, Column]]] | None]) -> None:
        """Wait (at most `straggler_s`) for the answers of the chunks workers claimed."""
        deadline = time.monotonic() + self.fan_out.straggler_s
        failed: set[int] = set()
        while any(a is None and i not in failed for i, a in enumerate(answers)):
            left = deadline - time.monotonic()
            if left <= 0:
                return
            # Short waits: a wait as long as the connection's read timeout would be taken for an outage.
            got = self.redis.blpop([f"{round_key}:answers"], timeout=min(1.0, max(0.01, left)))
            if got is None:
                continue
            chunk, columns = json.loads(got[1])
            if columns is None:
                failed.add(chunk)  # a worker failed on its chunk: priced here, without waiting for it
                continue
            answers[chunk] = [[(j, tuple((k, n) for k, n in column)) for j, column in block] for block in columns]
            self.stats.chunks_by_workers += 1

    def close(self) -> None:
        if self.fan_out.away:
            return  # its keys expire (SESSION_TTL_S)
        try:
            self.redis.delete(f"{self.prefix}:arrays")
        except QUEUE_OUTAGES as exc:
            self.fan_out.went_away(exc)


def price_chunk(prefix: str, round_: int, chunk: int, blocks: list[list[int]]) -> str:
    """The RQ job (run in the worker process itself, not a horse: `SolveWorker.execute_job`): claim the chunk,
    price its blocks at the round's duals, push the columns to the round's answers."""
    redis = require_context().keys.redis
    round_key = f"{prefix}:{round_}"
    duals = redis.get(f"{round_key}:duals")
    if duals is None:
        return "skipped: the round is over"
    if not redis.set(_claim_key(round_key, chunk), "worker", nx=True, ex=CLAIM_TTL_S):
        return "skipped: already claimed"
    columns: list[list[tuple[int, Column]]] | None = None
    try:
        pricer = _pricer(redis, prefix)
        prices = _unpack(duals)
        hosts = int(prices["hosts"][0]) or None
        columns = [
            pricer.price_block(np.asarray(b, dtype=np.int64), prices["sigma"], prices["pi"], hosts) for b in blocks
        ]
    finally:  # a failure answers too, so that the solve prices the chunk at once
        with redis.pipeline() as pipe:
            pipe.rpush(f"{round_key}:answers", json.dumps([chunk, columns]))
            pipe.expire(f"{round_key}:answers", CLAIM_TTL_S)
            pipe.execute()
    return f"priced {len(blocks)} blocks"


def _claim_key(round_key: str, chunk: int) -> str:
    return f"{round_key}:claim:{chunk}"


# The pricer of the session this worker process priced last: a session's chunks all read the same arrays.
_cached: tuple[str, BlockPricer] | None = None


def _pricer(redis: Redis, prefix: str) -> BlockPricer:
    global _cached
    if _cached is None or _cached[0] != prefix:
        packed = redis.get(f"{prefix}:arrays")
        if packed is None:
            raise LookupError(f"pricing session {prefix} is closed")
        _cached = (prefix, BlockPricer(Arrays(**_unpack(packed))))
    return _cached[1]


def _fields(a: Arrays) -> dict[str, np.ndarray]:
    return {f.name: getattr(a, f.name) for f in dataclasses.fields(a)}


def _pack(arrays: dict[str, np.ndarray]) -> bytes:
    out = io.BytesIO()
    np.savez(out, allow_pickle=False, **arrays)
    return out.getvalue()


def _unpack(packed: bytes) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(packed), allow_pickle=False) as f:
        return {name: f[name] for name in f.files}
