"""A finished solve's `Answer`, and what keeps it while the database does not answer: the horse retries writing
it for `result_retry_s` (`deliver`), then writes it to a `Spool` directory on this machine, which the worker pool
replays until the database takes it (and at its next start), holding the row's lease meanwhile so that no sweep
solves it again. A database outage never costs a solve."""

from __future__ import annotations

import json
import logging
import math
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optsched.infra.availability import Availability, retry_while_away
from optsched.infra.queue import record_outcome
from optsched.infra.rq.context import WorkerContext
from optsched.infra.rq.keys import job_id
from optsched.infra.rq.lease import Lease, hold
from optsched.infra.store import DATABASE_OUTAGES, JobState, PlanStore

log = logging.getLogger(__name__)

OVERRUN = "overrun"  # an Answer's outcome for a solve stopped past its time limit (payload: the error)


@dataclass(frozen=True)
class Answer:
    """A finished solve's answer to one claim, as the store takes it and the spool keeps it: `outcome` and `payload`
    are the Runner's ("result", "invalid", "error"), or OVERRUN and the error for a solve stopped past its limit."""

    plan_id: str
    attempt: int
    outcome: str
    payload: Any

    def record(self, store: PlanStore) -> JobState | None:
        """Write it onto its claim: the state written, or None when the claim is no longer current."""
        if self.outcome == OVERRUN:
            return store.finish_overrun(self.plan_id, self.attempt, self.payload)
        return record_outcome(store, self.plan_id, self.attempt, self.outcome, self.payload)

    def dumps(self) -> str:
        return json.dumps({"plan_id": self.plan_id, "attempt": self.attempt, "outcome": self.outcome,
                           "payload": self.payload})

    @classmethod
    def loads(cls, text: str) -> Answer:
        return cls(**json.loads(text))


class Spool:
    """Answers the store did not take while the database did not answer: one JSON file per claim in a directory of
    this machine (folder 0700, files 0600), each written whole (temporary file, fsync, rename) before the horse
    lets go of its claim. The worker pool replays them, oldest first, until the database takes them."""

    SUFFIX = ".answer.json"

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)

    def put(self, answer: Answer) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = self.directory / f"{answer.plan_id}-{answer.attempt}{self.SUFFIX}"
        temporary = self.directory / f".{path.name}.{os.getpid()}.tmp"
        with os.fdopen(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as out:
            out.write(answer.dumps())
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
        folder = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
        return path

    def entries(self) -> list[tuple[Path, Answer]]:
        """The spooled answers, oldest first (an unreadable file is moved aside as `.bad`, and logged)."""
        if not self.directory.is_dir():
            return []
        found = []
        for path in sorted(self.directory.glob(f"*{self.SUFFIX}"), key=_mtime):
            try:
                found.append((path, Answer.loads(path.read_text())))
            except FileNotFoundError:
                continue  # replayed meanwhile by another pool on this machine
            except (TypeError, ValueError) as exc:
                log.error("spooled answer %s cannot be read (%s); moved aside as .bad", path, exc)
                path.replace(path.with_name(path.name + ".bad"))
        return found

    def replay(self, store: PlanStore) -> int:
        """Write every spooled answer to the store and delete its file; how many. While the database does not answer
        this raises (one of DATABASE_OUTAGES) and keeps the answers not written yet."""
        replayed = 0
        for path, answer in self.entries():
            state = answer.record(store)
            if state is None:
                log.warning("plan %s: spooled answer of claim %d dropped: the claim is no longer current "
                            "(cancelled meanwhile)", answer.plan_id, answer.attempt)
            else:
                log.warning("plan %s: spooled answer of claim %d recorded (%s)", answer.plan_id, answer.attempt,
                            state.value)
            path.unlink(missing_ok=True)
            replayed += 1
        return replayed


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return math.inf


def spool_lease(answer: Answer) -> Lease:
    """The lease a spooled answer's row is held by until the database takes the answer."""
    host = socket.gethostname()
    return Lease(answer.attempt, f"spooled {job_id(answer.plan_id, answer.attempt - 1)}", f"spool on {host}",
                 os.getpid(), host)


def hold_spooled(ctx: WorkerContext, spool: Spool) -> int:
    """Renew the lease of every row whose answer waits in the spool, so that no sweep solves it again; how many."""
    entries = spool.entries()
    for _, answer in entries:
        hold(ctx.keys.redis, ctx.keys.lease_key(answer.plan_id), spool_lease(answer), ctx.lease_s)
    return len(entries)


def deliver(ctx: WorkerContext, answer: Answer, database: Availability) -> JobState | None | Path:
    """Write a finished solve's answer to the store, retrying while the database does not answer; after
    `ctx.result_retry_s`, spool it (the path returned). A database outage never costs a solve."""
    try:
        return retry_while_away(lambda: answer.record(ctx.store), DATABASE_OUTAGES, database,
                                f"writing the answer of plan {answer.plan_id}", for_s=ctx.result_retry_s)
    except DATABASE_OUTAGES:
        path = Spool(ctx.spool_dir).put(answer)
        log.warning("plan %s: the database did not take the answer of claim %d within %g s; spooled to %s (the "
                    "worker pool records it once the database answers)", answer.plan_id, answer.attempt,
                    ctx.result_retry_s, path)
        return path
