"""Retention: resources that ended (finished, cancelled, failed) more than a time-to-live ago are deleted.

`expire(store, ttl_s)` deletes them in batches, each batch one transaction, each resource one row, so a resource
is there whole or gone, never half deleted; a reader that had its id gets a 404 afterwards. Unfinished resources
are never touched. Two processes may sweep the same store at once (the server and RQ worker pools): a row goes
once, and the other's delete finds nothing.

`RetentionSweeper` runs it every `interval_s` on a thread (`optsched serve`, any create_app with START_WORKERS);
RQ worker pools run it in their periodic housekeeping (optsched.infra.rq.sweep).
"""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime, timedelta

from optsched.infra.store import DATABASE_OUTAGES, PlanStore

log = logging.getLogger(__name__)

BATCH = 500
# One sweep deletes at most this many batches; a backlog larger than that is worked off by the next sweeps.
MAX_BATCHES = 200


def expire(store: PlanStore, ttl_s: float | None, *, now: datetime | None = None) -> int:
    """Delete the resources that ended more than `ttl_s` seconds before `now` (None or 0: keep all); how many."""
    if not ttl_s:
        return 0
    cutoff = (now or datetime.now(UTC)) - timedelta(seconds=ttl_s)
    deleted = 0
    for _ in range(MAX_BATCHES):
        gone = store.delete_expired(cutoff, BATCH)
        deleted += gone
        if gone < BATCH:
            break
    if deleted:
        log.info("retention: deleted %d resource(s) that ended before %s", deleted, cutoff.isoformat())
    return deleted


class RetentionSweeper:
    """`expire` every `interval_s` on a daemon thread until `stop`; a database outage skips a sweep, logged."""

    def __init__(self, store: PlanStore, ttl_s: float | None, interval_s: float):
        self.store = store
        self.ttl_s = ttl_s
        self.interval_s = interval_s
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is not None or not self.ttl_s:
            return
        self._thread = threading.Thread(target=self._run, name="optsched-retention", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                expire(self.store, self.ttl_s)
            except DATABASE_OUTAGES as exc:
                log.warning("retention sweep skipped: the database does not answer (%s)", type(exc).__name__)
            except Exception:  # noqa: BLE001 - the sweeper must outlive one bad sweep
                log.exception("retention sweep failed; trying again in %g s", self.interval_s)
            self._stopping.wait(self.interval_s)
