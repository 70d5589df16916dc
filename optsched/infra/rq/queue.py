"""The API side of the RQ queue: `RQQueue`, the `SolveQueue` (optsched.infra.queue) for many machines.

One RQ job per claim of a stored row, whose only argument is the row's id; the row itself stays in the shared store
(PostgreSQL). Jobs are serialised as JSON (never pickle), so a client that can write to Redis cannot make workers
run code. Cancellation (`DELETE`) marks the row `cancelled` in the store, then sends RQ's stop-job command to the
worker that holds the lease, wherever it runs; that worker kills its horse.
"""

from __future__ import annotations

import logging
import math
from typing import cast

from redis.exceptions import RedisError, WatchError
from rq import Worker
from rq.command import send_stop_job_command
from rq.exceptions import InvalidJobOperation, NoSuchJobError
from rq.job import Job
from rq.serializers import JSONSerializer

from optsched.infra.queue import QueueFull, Runner, poll_until_final
from optsched.infra.rq.keys import DEFAULT_QUEUE_NAME, QUEUE_OUTAGES, Keys, job_id
from optsched.infra.store import JobState, PlanRecord, PlanStore

log = logging.getLogger(__name__)

DEFAULT_GRACE_S = 5.0
# Seconds one waiting job is assumed to take, for the Retry-After of a full queue.
ASSUMED_SOLVE_S = 5.0
# Attempts at the bounded enqueue's transaction before a busy queue answers 'full' (each lost one means another
# submit or a worker changed the queue meanwhile).
ENQUEUE_TRIES = 50


class RQQueue:
    """Submit to RQ workers (`optsched worker`, on any machine); the store must be shared (PostgreSQL)."""

    def __init__(
        self,
        store: PlanStore,
        url: str,
        *,
        runner: Runner,
        queue_name: str = DEFAULT_QUEUE_NAME,
        queue_size: int | None = None,
        grace_s: float = DEFAULT_GRACE_S,
    ):
        self.store = store
        self.runner = runner
        self.keys = Keys(url, queue_name)
        self.queue_size = queue_size
        self.grace_s = grace_s
        self._running = False

    def start(self) -> None:
        """Nothing runs here: workers solve, and their pools requeue what a dead process left (see `sweep`)."""
        self._running = True

    def stop(self) -> None:
        self._running = False
        self.keys.redis.close()

    def submit(self, plan_id: str) -> None:
        if self.queue_size is not None and self.keys.queue.count >= self.queue_size:
            raise QueueFull(self.queue_size, self._retry_after_s(self.queue_size))  # cheap early answer
        record = self.store.get(plan_id)
        if record is None or record.status != JobState.queued:
            return
        if self.queue_size is None:
            self.keys.enqueue(record, self.runner.budget_s(record), self.grace_s)
            return
        self._enqueue_bounded(record, self.queue_size)

    def _enqueue_bounded(self, record: PlanRecord, size: int) -> None:
        """Count and enqueue as one Redis transaction: WATCH the queue's list, count it, enqueue in MULTI/EXEC. An
        enqueue or dequeue by anyone in between makes EXEC fail and the count is taken again, so no more than
        `size` jobs ever wait, however many API processes submit at once."""
        key = self.keys.queue.key
        budget_s = self.runner.budget_s(record)
        with self.keys.redis.pipeline() as pipe:
            for _ in range(ENQUEUE_TRIES):
                try:
                    pipe.watch(key)
                    waiting = cast(int, pipe.llen(key))  # a watching pipeline answers at once, until multi()
                    if waiting >= size:
                        raise QueueFull(size, self._retry_after_s(waiting))
                    pipe.multi()
                    self.keys.enqueue(record, budget_s, self.grace_s, pipeline=pipe)
                    pipe.execute()
                    return
                except WatchError:
                    continue
        raise QueueFull(size, self._retry_after_s(size))  # that busy: as good as full

    def cancel(self, plan_id: str) -> PlanRecord | None:
        record, changed = self.store.cancel(plan_id)
        if changed and record is not None:
            try:
                self._stop_job(record)
            except QUEUE_OUTAGES as exc:  # the row is cancelled all the same; its horse sees that by itself
                log.warning("plan %s cancelled; Redis does not answer (%s), so its solve stops when its horse next "
                            "looks at the row (within a third of the lease)", record.id, type(exc).__name__)
        return record

    def depth(self) -> int:
        return self.keys.queue.count

    def healthy(self) -> bool:
        if not self._running:
            return False
        try:
            return bool(self.keys.redis.ping())
        except RedisError:
            return False

    def unready_reason(self) -> str | None:
        if not self._running:
            return "the RQ queue is not started"
        try:
            self.keys.redis.ping()
        except RedisError as exc:
            return f"Redis (the solve queue) does not answer ({type(exc).__name__})"
        return None

    def wait(self, plan_id: str, timeout_s: float) -> PlanRecord | None:
        return poll_until_final(self.store, plan_id, timeout_s)

    def worker_count(self) -> int:
        """Workers whose registration is alive (a vanished worker's expires; one that lost it registers again)."""
        return len(Worker.all(queue=self.keys.queue, serializer=JSONSerializer))

    def _stop_job(self, record: PlanRecord) -> None:
        """Stop the RQ job of a row just cancelled: drop it from the queue, or tell its worker to kill it."""
        lease = self.keys.lease(record.id)
        try:
            if lease is not None:
                send_stop_job_command(self.keys.redis, lease.job, serializer=JSONSerializer)
                self.keys.redis.delete(self.keys.lease_key(record.id))
                log.info("plan %s cancelled; stop-job sent to worker %s (pid %s on %s)", record.id, lease.worker,
                         lease.pid, lease.host)
            else:
                Job.fetch(job_id(record.id, record.attempts), connection=self.keys.redis,
                          serializer=JSONSerializer).cancel()
        except (NoSuchJobError, InvalidJobOperation):
            pass  # already gone: its claim fails on the cancelled row, or its horse sees the row is no longer its own

    def _retry_after_s(self, waiting: int) -> int:
        """A guess at when a slot frees up: a few seconds per waiting job, spread over the live workers."""
        try:
            workers = max(1, self.worker_count())
        except RedisError:
            workers = 1
        return max(1, min(300, math.ceil(waiting * ASSUMED_SOLVE_S / workers)))
