"""A solving row's lease in Redis, and the horse's `LeaseHolder` that keeps it while the solve runs.

The lease (`optsched:<queue>:lease:<id>`, JSON: claim number, RQ job, worker, pid, host) expires `lease_s` after its
last renewal; the sweep (optsched.infra.rq.sweep) takes a claim whose lease stays missing for a whole lease as
dead. So the renewal must never wait for anything slower than Redis: it runs on a thread of its own, and the
check whether the row is still this solve's claim (a database read, which may stall) runs on another.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from dataclasses import asdict, dataclass

from redis import Redis
from redis.exceptions import RedisError

from optsched.infra.availability import Availability
from optsched.infra.store import DATABASE_OUTAGES, JobState, PlanStore

log = logging.getLogger(__name__)

# Seconds a solving row's lease lasts without renewal: how long a dead worker's row waits before it is requeued.
DEFAULT_LEASE_S = 15.0
# A lease is renewed this many times per lease: a renewal may come late by (RENEWALS - 1) / RENEWALS of a lease.
RENEWALS_PER_LEASE = 3
# A horse (and a worker process) checks this often whether its parent is still there.
ORPHAN_POLL_S = 0.5
# Exit codes of a horse that stops itself.
EXIT_ORPHANED, EXIT_CLAIM_LOST = 70, 71


@dataclass(frozen=True)
class Lease:
    """Who holds a solving row: its claim number, RQ job, worker name, horse pid and host."""

    attempt: int
    job: str
    worker: str
    pid: int
    host: str

    def dumps(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def loads(cls, raw: bytes | str | None) -> Lease | None:
        if raw is None:
            return None
        try:
            return cls(**json.loads(raw))
        except (TypeError, ValueError):
            return None


def hold(redis: Redis, key: str, lease: Lease, lease_s: float) -> None:
    """Write (or renew) `lease` at `key` for `lease_s` seconds."""
    redis.set(key, lease.dumps(), px=int(lease_s * 1000))


class LeaseHolder:
    """In the horse, while it solves: holds `lease` (the claim `lease.attempt` of row `plan_id`), and exits the horse
    when its worker is gone (EXIT_ORPHANED) or the row is no longer its claim (EXIT_CLAIM_LOST, cancelled or
    requeued). The renewal thread talks only to Redis (while Redis does not answer, it tries again at the next
    renewal); the claim thread reads the store, and while the database does not answer it keeps the claim (ours
    until the store says otherwise). Once the solve is over (`solved`) the claim is not checked any more, while
    the answer is written."""

    def __init__(self, redis: Redis, key: str, lease: Lease, lease_s: float, store: PlanStore, plan_id: str):
        self.redis, self.key, self.lease, self.lease_s = redis, key, lease, lease_s
        self.store, self.plan_id = store, plan_id
        self.every_s = lease_s / RENEWALS_PER_LEASE
        self.parent = os.getppid()
        self.done = threading.Event()
        self.solved = threading.Event()
        # Serialises renewals with `release`: no renewal lands after the lease was released or handed over.
        self._lock = threading.Lock()
        self.redis_state = Availability("Redis", log)
        self.database = Availability("the database", log)
        self._threads = (
            threading.Thread(target=self._keep_renewing, name="optsched-lease", daemon=True),
            threading.Thread(target=self._watch_claim, name="optsched-claim", daemon=True),
        )
        self.renew()

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def renew(self) -> None:
        with self._lock:
            if self.done.is_set():
                return
            try:
                hold(self.redis, self.key, self.lease, self.lease_s)
            except RedisError as exc:
                self.redis_state.failed(exc, f"renewing the lease of plan {self.plan_id}")
                return
        self.redis_state.ok()

    def _keep_renewing(self) -> None:
        next_renewal = time.monotonic() + self.every_s
        while not self.done.wait(min(ORPHAN_POLL_S, max(0.0, next_renewal - time.monotonic()))):
            if os.getppid() != self.parent:
                log.error("plan %s: this solve's worker is gone; stopping (the row is requeued)", self.plan_id)
                os._exit(EXIT_ORPHANED)
            if time.monotonic() < next_renewal:
                continue
            next_renewal = time.monotonic() + self.every_s
            try:
                self.renew()
            except Exception:  # noqa: BLE001 - an unexpected hiccup: try again at the next renewal
                log.exception("plan %s: cannot renew the lease", self.plan_id)

    def _watch_claim(self) -> None:
        while not self.done.wait(self.every_s):
            try:
                if not self.solved.is_set() and self._claim_lost() and not self.solved.is_set() and self._let_go():
                    os._exit(EXIT_CLAIM_LOST)
            except Exception:  # noqa: BLE001 - an unexpected hiccup: look again at the next round
                log.exception("plan %s: cannot check the claim", self.plan_id)

    def _let_go(self) -> bool:
        """Delete the lease of a lost claim; False when the holder was released meanwhile (the solve is over)."""
        with self._lock:
            if self.done.is_set():
                return False
            self.done.set()
            with contextlib.suppress(RedisError):
                self.redis.delete(self.key)
        return True

    def _claim_lost(self) -> bool:
        """Whether the store says the row is no longer this solve's claim (False while the database is away)."""
        try:
            row = self.store.get(self.plan_id)
        except DATABASE_OUTAGES as exc:
            self.database.failed(exc, f"checking the claim of plan {self.plan_id}")
            return False
        self.database.ok()
        if row is None or row.status != JobState.solving or row.attempts != self.lease.attempt:
            log.warning("plan %s is no longer this solve's claim (%s); stopping", self.plan_id,
                        row.status if row else "deleted")
            return True
        return False

    def release(self, handover: Lease | None = None) -> None:
        """The solve's answer is written (delete the lease) or waits elsewhere (hand the lease to `handover`)."""
        with self._lock:
            self.done.set()
            try:
                if handover is not None:
                    hold(self.redis, self.key, handover, self.lease_s)
                else:
                    self.redis.delete(self.key)
            except RedisError:
                log.warning("plan %s: cannot update the lease (Redis does not answer); it expires in %g s",
                            self.plan_id, self.lease_s)
