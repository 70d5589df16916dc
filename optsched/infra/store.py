"""The job store: one `plans` table in SQLAlchemy 2 (SQLite by default, any SQLAlchemy URL works).

A row is a job of one resource kind, named in `kind` (the kinds are the service's: optsched.service.kinds; the
store never interprets them): `workload` is the input document, `params` the solve's keyword arguments, `plan`
the result document, stored whole, whatever the kind. `status` is the job's lifecycle (`JobState`); a finished
job's `verdict` is its kind's word on the result (optimal, met, done, ...), also opaque to the store.
Every state change is one transaction with a condition on the current state, so a reader never sees half a
plan and two actors (a solve finishing, a user cancelling) cannot both win. A claim increments `attempts`;
the attempt number is the token that later finishes or requeues that claim, so a stale actor cannot
overwrite a newer claim of the same plan.
"""

from __future__ import annotations

import builtins  # `list` is also a method of PlanStore
import json
import logging
import os
import re
import stat
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import Enum
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Connection,
    Engine,
    and_,
    create_engine,
    delete,
    event,
    func,
    insert,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from optsched.infra.migrations import upgrade
from optsched.infra.tables import (  # noqa: F401 - re-exported
    DEFAULT_DATABASE_URL,
    DEFAULT_TEAM,
    FIRST_KIND,
    metadata,
    plans,
)
from optsched.schema.errors import OptschedError

log = logging.getLogger(__name__)

# A plan whose solve was interrupted this many times (server or worker died) is marked failed, not retried.
MAX_ATTEMPTS = 3
# What the store raises when the database does not answer (down, refusing connections, connections cut, pool
# exhausted): an outage of a dependency, not a bug. The API answers 503 and workers retry (optsched.infra.rq).
DATABASE_OUTAGES: tuple[type[Exception], ...] = (OperationalError, InterfaceError, PoolTimeout)
SQLITE_BUSY_TIMEOUT_MS = 10_000


class JobState(Enum):
    """Lifecycle of a job, whatever its kind: queued -> solving -> finished (with its kind's verdict), or
    cancelled or failed (no result). Requeueing sends a solving job back to queued."""

    queued = "queued"
    solving = "solving"
    finished = "finished"
    cancelled = "cancelled"
    failed = "failed"

    @property
    def final(self) -> bool:
        return self not in UNFINISHED


UNFINISHED = (JobState.queued, JobState.solving)
FINAL_STATES = (JobState.finished, JobState.cancelled, JobState.failed)
# The verdicts the queues write when they stop a solve past its time budget: `time_limit` when it reported an
# incumbent (kept as the result), else `no_solution`. Every kind's statuses include them (optsched.service.kinds).
OVERRUN_VERDICTS = ("time_limit", "no_solution")


class InvalidCursor(OptschedError, ValueError):
    """A paging cursor that this store did not hand out; start again without one."""


_SUMMARY_COLUMNS = [c for c in plans.c if c.name not in ("workload", "plan")]
# Figures an overview of many resources shows, read out of the documents by the database (none is loaded whole):
# the workload's name, a plan's objective and power, a night plan's summary, a frontier's knee and saturation.
_HEADLINE_PREFIX = "headline_"
_HEADLINE_COLUMNS = [
    expression.label(_HEADLINE_PREFIX + name)
    for name, expression in {
        "name": plans.c.workload["name"].as_string(),
        "objective_name": plans.c.plan["objective_name"].as_string(),
        "objective": plans.c.plan["objective"].as_float(),
        "power_w": plans.c.plan["power_w"].as_float(),
        "budget_w": plans.c.plan["budget_w"].as_float(),
        "makespan_hours": plans.c.plan[("summary", "makespan_hours")].as_float(),
        "hard_deadlines_met": plans.c.plan[("summary", "hard_deadlines_met")].as_integer(),
        "peak_power_w": plans.c.plan[("summary", "peak_power_w")].as_float(),
        "knee_budget_w": plans.c.plan["knee_budget_w"].as_float(),
        "saturation_w": plans.c.plan["saturation_w"].as_float(),
    }.items()
]


@dataclass(frozen=True)
class PlanRecord:
    """One row of `plans`. `workload` and `plan` (the result) are None when the query did not load them (listings)."""

    id: str
    status: JobState
    submitted_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    error: str | None
    attempts: int
    idempotency_key: str | None
    workload: dict[str, Any] | None = None
    plan: dict[str, Any] | None = None
    kind: str = FIRST_KIND
    params: dict[str, Any] | None = None
    headline: dict[str, Any] | None = None  # listings with headline=True: figures read out of the documents
    verdict: str | None = None  # set when finished
    team: str = DEFAULT_TEAM
    stored_bytes: int = 0

    @property
    def outcome(self) -> str:
        """What a user sees as the status: the verdict once finished, else the lifecycle state."""
        return self.verdict if self.status is JobState.finished and self.verdict else self.status.value

    @property
    def result(self) -> dict[str, Any] | None:
        """The result document, whatever the kind (the column is named after the first kind)."""
        return self.plan

    @classmethod
    def from_row(cls, row: Any) -> PlanRecord:
        m = row._mapping
        return cls(
            id=m["id"],
            status=JobState(m["status"]),
            submitted_at=m["submitted_at"],
            started_at=m["started_at"],
            finished_at=m["finished_at"],
            error=m["error"],
            attempts=m["attempts"],
            idempotency_key=m["idempotency_key"],
            workload=m.get("workload"),
            plan=m.get("plan"),
            kind=m["kind"],
            params=m.get("params"),
            verdict=m.get("verdict"),
            team=m.get("team", DEFAULT_TEAM),
            stored_bytes=m.get("stored_bytes") or 0,
            headline={k.removeprefix(_HEADLINE_PREFIX): v for k, v in m.items() if k.startswith(_HEADLINE_PREFIX)}
            or None,
        )


@dataclass(frozen=True, slots=True)
class EndedJob:
    """The times and outcome of a job that ended, without its documents (what metrics count)."""

    id: str
    kind: str
    status: str  # a final JobState's value
    verdict: str | None
    submitted_at: datetime
    started_at: datetime | None
    finished_at: datetime

    @property
    def outcome(self) -> str:
        """As PlanRecord.outcome: the verdict once finished, else the state (failed, cancelled)."""
        return self.verdict if self.status == JobState.finished.value and self.verdict else self.status


def _now() -> datetime:
    return datetime.now(UTC)


def document_bytes(*documents: Any) -> int:
    """What documents weigh in the store: their compact JSON, in bytes (None weighs nothing)."""
    return sum(len(json.dumps(d, separators=(",", ":")).encode()) for d in documents if d is not None)


@dataclass(frozen=True)
class Usage:
    """What one team holds in the store: rows not final yet, bytes of all its rows' documents, and when its oldest
    final row finished (None: it has none)."""

    unfinished: int
    stored_bytes: int
    oldest_finished_at: datetime | None


class PlanStore:
    """Plans in a SQL database; thread-safe (one engine, one connection per operation)."""

    def __init__(self, url: str = DEFAULT_DATABASE_URL, *, engine: Engine | None = None):
        self.url = url
        self.engine = engine or _create_engine(url)
        # Outages this process met, by error class (api/metrics.py publishes them): every statement and connection
        # attempt of this engine goes through handle_error when it fails, whichever thread made it.
        self._outages: dict[str, int] = {}
        self._outages_lock = threading.Lock()
        event.listen(self.engine, "handle_error", self._count_outage)
        # The schema is Alembic's (optsched/infra/migrations): a new database is created, an older one upgraded.

        upgrade(self.engine)

    def close(self) -> None:
        self.engine.dispose()

    # -- reads -------------------------------------------------------------------------------------

    def get(
        self, plan_id: str, kind: str | None = None, team: str | None = None, *, documents: bool = True
    ) -> PlanRecord | None:
        """The record with this id (of this kind, of this team, when given), or None; without its workload and
        result when `documents` is False (a 1,000-job plan's documents are about 1 MB of JSON to parse)."""
        query = (select(plans) if documents else select(*_SUMMARY_COLUMNS)).where(plans.c.id == plan_id)
        if kind is not None:
            query = query.where(plans.c.kind == kind)
        if team is not None:
            query = query.where(plans.c.team == team)
        with self.engine.connect() as c:
            row = c.execute(query).first()
        return PlanRecord.from_row(row) if row else None

    def get_by_key(self, idempotency_key: str, team: str = DEFAULT_TEAM) -> PlanRecord | None:
        """The team's record stored with this idempotency key (keys are unique per team), or None."""
        with self.engine.connect() as c:
            row = c.execute(
                select(plans).where(plans.c.team == team, plans.c.idempotency_key == idempotency_key)
            ).first()
        return PlanRecord.from_row(row) if row else None

    def usage(self, team: str) -> Usage:
        """What the team holds (`Usage`), in one query."""
        with self.engine.connect() as c:
            return _usage(c, team)

    def list(
        self,
        *,
        limit: int = 20,
        cursor: str | None = None,
        status: JobState | None = None,
        verdict: str | None = None,
        kind: str | None = None,
        team: str | None = None,
        headline: bool = False,
    ) -> tuple[list[PlanRecord], str | None]:
        """Newest first, without documents; the second item is the cursor of the next page (None on the last).
        `status`, `verdict`, `kind` and `team` filter when given; `headline` adds a few figures read out of the
        documents."""
        columns = [*_SUMMARY_COLUMNS, *(_HEADLINE_COLUMNS if headline else [])]
        query = select(*columns).order_by(plans.c.submitted_at.desc(), plans.c.id.desc()).limit(limit + 1)
        if status is not None:
            query = query.where(plans.c.status == status.value)
        if verdict is not None:
            query = query.where(plans.c.verdict == verdict)
        if kind is not None:
            query = query.where(plans.c.kind == kind)
        if team is not None:
            query = query.where(plans.c.team == team)
        if cursor is not None:
            at, last_id = _decode_cursor(cursor)
            query = query.where(or_(plans.c.submitted_at < at, and_(plans.c.submitted_at == at, plans.c.id < last_id)))
        with self.engine.connect() as c:
            rows = [PlanRecord.from_row(r) for r in c.execute(query)]
        if len(rows) <= limit:
            return rows, None
        rows = rows[:limit]
        return rows, _encode_cursor(rows[-1])

    def ids_with_state(self, state: JobState) -> builtins.list[str]:
        """Ids in this state, oldest first."""
        with self.engine.connect() as c:
            result = c.execute(
                select(plans.c.id).where(plans.c.status == state.value).order_by(plans.c.submitted_at, plans.c.id)
            )
            return [r.id for r in result]

    def ping(self) -> None:
        """Raise if the database cannot answer a query."""
        with self.engine.connect() as c:
            c.execute(select(plans.c.id).limit(1)).all()

    def finished_since(self, since: datetime, limit: int, after_id: str | None = None) -> builtins.list[EndedJob]:
        """Up to `limit` jobs that ended (finished, failed or cancelled) at or after `since`, in the order they
        ended (then by id); with `after_id`, those that ended at `since` only after that id."""
        ended = plans.c.finished_at >= since
        if after_id is not None:
            ended = or_(plans.c.finished_at > since, and_(plans.c.finished_at == since, plans.c.id > after_id))
        # Only final rows have an end time (finish, cancel and recover set it; nothing clears it); the state is not
        # a condition of the query, so that the database walks ix_plans_finished rather than a status index.
        query = (
            select(*(plans.c[name] for name in EndedJob.__dataclass_fields__))
            .where(ended)
            .order_by(plans.c.finished_at, plans.c.id)
            .limit(limit)
        )
        with self.engine.connect() as c:
            return [EndedJob(*row) for row in c.execute(query)]

    def oldest_queued(self) -> datetime | None:
        """When the job that has waited longest for a worker was submitted (None: none waits)."""
        query = (
            select(plans.c.submitted_at)
            .where(plans.c.status == JobState.queued.value)
            .order_by(plans.c.submitted_at, plans.c.id)
            .limit(1)
        )
        with self.engine.connect() as c:
            return c.execute(query).scalar()

    def outages(self) -> dict[str, int]:
        """Errors of the database this process met (it did not answer, refused, cut a session), by error class."""
        with self._outages_lock:
            return dict(self._outages)

    def _count_outage(self, context: Any) -> None:
        error = context.sqlalchemy_exception
        if isinstance(error, DATABASE_OUTAGES):
            with self._outages_lock:
                name = type(error).__name__
                self._outages[name] = self._outages.get(name, 0) + 1

    # -- state changes, each one transaction ----------------------------------------------------------

    def create(
        self,
        workload: dict[str, Any],
        idempotency_key: str | None = None,
        *,
        kind: str = FIRST_KIND,
        params: dict[str, Any] | None = None,
        team: str = DEFAULT_TEAM,
        admit: Callable[[Usage], None] | None = None,
    ) -> tuple[PlanRecord, bool]:
        """Store a queued resource of `team`; with a key the team already used (for any kind), return that one
        instead (second item False: the caller compares kind, workload and params to tell a retry from a reused
        key). Keys are the team's own: another team's key is another key.

        `admit(usage)` is called with what the team holds, in the transaction of the insert and under the team's
        lock (`_lock_team`), and raises to refuse it: so two concurrent creates of one team cannot both pass a
        share or quota that only one of them fits in (checked before the insert, in its own statement, they did)."""
        if idempotency_key is not None:
            existing = self.get_by_key(idempotency_key, team)
            if existing is not None:
                return existing, False
        record = PlanRecord(
            id=uuid.uuid4().hex,
            status=JobState.queued,
            submitted_at=_now(),
            started_at=None,
            finished_at=None,
            error=None,
            attempts=0,
            idempotency_key=idempotency_key,
            workload=workload,
            kind=kind,
            params=params,
            team=team,
            stored_bytes=document_bytes(workload, params),
        )
        values = {
            "id": record.id,
            "kind": kind,
            "status": record.status.value,
            "workload": workload,
            "params": params,
            "idempotency_key": idempotency_key,
            "submitted_at": record.submitted_at,
            "attempts": 0,
            "team": team,
            "stored_bytes": record.stored_bytes,
        }
        try:
            with self.engine.begin() as c:
                if admit is not None:
                    _lock_team(c, team)
                    admit(_usage(c, team))
                c.execute(insert(plans).values(**values))
        except IntegrityError:
            # A concurrent request with the same key won the insert.
            existing = self.get_by_key(idempotency_key, team) if idempotency_key is not None else None
            if existing is None:
                raise
            return existing, False
        return record, True

    def claim(self, plan_id: str) -> PlanRecord | None:
        """queued -> solving; the record (its `attempts` is the claim token), or None if it is not queued."""
        with self.engine.begin() as c:
            changed = c.execute(
                update(plans)
                .where(plans.c.id == plan_id, plans.c.status == JobState.queued.value)
                .values(status=JobState.solving.value, started_at=_now(), attempts=plans.c.attempts + 1)
            ).rowcount
            if not changed:
                return None
            row = c.execute(select(plans).where(plans.c.id == plan_id)).first()
        return PlanRecord.from_row(row)

    def finish(
        self,
        plan_id: str,
        attempt: int,
        state: JobState,
        *,
        verdict: str | None = None,
        plan: dict[str, Any] | None = None,
        error: str | None = None,
    ) -> bool:
        """solving -> a final state (`finished` with the kind's verdict), for the claim `attempt` only; False if
        cancelled or claimed again since."""
        if not state.final:
            raise ValueError(f"finish needs a final state, not {state}")
        if (state is JobState.finished) != (verdict is not None):
            raise ValueError(f"a finished job has a verdict and no other final state has one ({state}, {verdict!r})")
        # Counted once: a claim finishes once (incumbents, replaced while solving, are not counted).
        return self._update_claim(
            plan_id, attempt, status=state.value, verdict=verdict, plan=plan, error=error, finished_at=_now(),
            stored_bytes=plans.c.stored_bytes + document_bytes(plan),
        )

    def requeue(self, plan_id: str, attempt: int) -> bool:
        """solving -> queued for the claim `attempt` (its worker stopped before answering); its incumbent goes."""
        return self._update_claim(plan_id, attempt, status=JobState.queued.value, started_at=None, plan=None)

    def record_incumbent(self, plan_id: str, attempt: int, plan: dict[str, Any]) -> bool:
        """While solving under the claim `attempt`, keep the best plan so far (the row stays `solving`)."""
        return self._update_claim(plan_id, attempt, plan=plan)

    def finish_overrun(self, plan_id: str, attempt: int, error: str) -> JobState | None:
        """End a claim whose solve overran and was stopped: finished `time_limit` with its last incumbent when it
        reported one (the plan is kept, not thrown away), else `no_solution`; None when the claim was no longer
        current."""
        record = self.get(plan_id)
        if record is None or record.status != JobState.solving or record.attempts != attempt:
            return None
        with_incumbent, without = OVERRUN_VERDICTS
        if record.plan is not None:
            document = {**record.plan, "status": with_incumbent}
            done = self.finish(plan_id, attempt, JobState.finished, verdict=with_incumbent, plan=document, error=error)
        else:
            done = self.finish(plan_id, attempt, JobState.finished, verdict=without, error=error)
        return JobState.finished if done else None

    def _update_claim(self, plan_id: str, attempt: int, **values: Any) -> bool:
        """One transaction that changes a row only while it is still solving under the claim `attempt`."""
        with self.engine.begin() as c:
            return bool(
                c.execute(
                    update(plans)
                    .where(
                        plans.c.id == plan_id,
                        plans.c.status == JobState.solving.value,
                        plans.c.attempts == attempt,
                    )
                    .values(**values)
                ).rowcount
            )

    def cancel(self, plan_id: str) -> tuple[PlanRecord | None, bool]:
        """queued/solving -> cancelled; the record as it now is and whether this call cancelled it."""
        with self.engine.begin() as c:
            changed = c.execute(
                update(plans)
                .where(plans.c.id == plan_id, plans.c.status.in_([s.value for s in UNFINISHED]))
                .values(status=JobState.cancelled.value, finished_at=_now())
            ).rowcount
            row = c.execute(select(plans).where(plans.c.id == plan_id)).first()
        return (PlanRecord.from_row(row) if row else None), bool(changed)

    def delete(self, plan_id: str, states: Iterable[JobState] = FINAL_STATES) -> bool:
        """Delete the plan if it is in one of `states` (by default: finished ones only)."""
        with self.engine.begin() as c:
            return bool(
                c.execute(
                    delete(plans).where(plans.c.id == plan_id, plans.c.status.in_([s.value for s in states]))
                ).rowcount
            )

    def delete_expired(self, finished_before: datetime, limit: int = 500) -> int:
        """Delete up to `limit` final rows that finished before `finished_before`, oldest first, in one transaction
        (each row is a whole resource: it goes entirely or not at all); how many went."""
        expired = (
            select(plans.c.id)
            .where(plans.c.status.in_([s.value for s in FINAL_STATES]), plans.c.finished_at < finished_before)
            .order_by(plans.c.finished_at)
            .limit(limit)
        )
        with self.engine.begin() as c:
            ids = [r.id for r in c.execute(expired)]
            if not ids:
                return 0
            return int(
                c.execute(
                    delete(plans).where(
                        plans.c.id.in_(ids),
                        plans.c.status.in_([s.value for s in FINAL_STATES]),
                        plans.c.finished_at < finished_before,
                    )
                ).rowcount
            )

    def recover(self, max_attempts: int = MAX_ATTEMPTS) -> builtins.list[str]:
        """After a restart: plans left solving are queued again (failed after `max_attempts`); the queued ids."""
        with self.engine.begin() as c:
            c.execute(
                update(plans)
                .where(plans.c.status == JobState.solving.value, plans.c.attempts >= max_attempts)
                .values(
                    status=JobState.failed.value,
                    finished_at=_now(),
                    error=f"the solve was interrupted {max_attempts} times (server or worker stopped); not retried",
                )
            )
            c.execute(
                update(plans)
                .where(plans.c.status == JobState.solving.value)
                .values(status=JobState.queued.value, started_at=None)
            )
        return self.ids_with_state(JobState.queued)

    def stale_solving(self, older_than: datetime) -> builtins.list[PlanRecord]:
        """Plans solving since before `older_than` (with their workloads), to find claims whose owner died."""
        with self.engine.connect() as c:
            rows = c.execute(
                select(plans).where(plans.c.status == JobState.solving.value, plans.c.started_at < older_than)
            )
            return [PlanRecord.from_row(r) for r in rows]


def _usage(c: Connection, team: str) -> Usage:
    """What the team holds, read on the connection `c` (inside its transaction when it has one)."""
    final = plans.c.status.in_([s.value for s in FINAL_STATES])
    query = select(
        func.count().filter(plans.c.status.in_([s.value for s in UNFINISHED])),
        func.coalesce(func.sum(plans.c.stored_bytes), 0),
        func.min(plans.c.finished_at).filter(final),
    ).where(plans.c.team == team)
    unfinished, stored, oldest = c.execute(query).one()
    return Usage(unfinished=int(unfinished or 0), stored_bytes=int(stored or 0), oldest_finished_at=oldest)


def _lock_team(c: Connection, team: str) -> None:
    """Hold, until the transaction on `c` ends, a lock that other creates of `team` wait for before they read what
    it holds. PostgreSQL: a transaction-level advisory lock keyed by the team (other teams do not wait; each
    statement of READ COMMITTED then sees what the last holder committed). SQLite: the database's write lock, taken
    by a write that changes nothing (pysqlite begins the transaction before it), since SQLite has one writer at a
    time anyway; a read before it would run outside the write transaction. Other databases: a row lock on the
    team's rows (SELECT ... FOR UPDATE), which does not stop a first insert racing another."""
    dialect = c.dialect.name
    if dialect == "postgresql":
        c.execute(select(func.pg_advisory_xact_lock(func.hashtextextended(team, TEAM_LOCK_SEED))))
    elif dialect == "sqlite":
        c.execute(update(plans).where(plans.c.id.is_(None)).values(id=plans.c.id))
    else:
        c.execute(select(plans.c.id).where(plans.c.team == team).with_for_update())


# The seed of the advisory lock keys of teams: the locks of another application on the same database, keyed by
# other numbers, never meet ours by chance more than any two 64-bit hashes do.
TEAM_LOCK_SEED = 0x6F7074  # "opt"


# A page cursor: the last record's submission time in microseconds since the epoch (UTC) and its id. Any text of
# this shape is a valid position (the page after it), so a well-formed cursor never fails; others are rejected.
CURSOR_PATTERN = r"^[0-9]{1,16}-[0-9a-f]{32}$"
_CURSOR = re.compile(CURSOR_PATTERN.removeprefix("^").removesuffix("$"))
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _encode_cursor(record: PlanRecord) -> str:
    at = record.submitted_at if record.submitted_at.tzinfo is not None else record.submitted_at.replace(tzinfo=UTC)
    micros = (at - _EPOCH) // timedelta(microseconds=1)
    return f"{micros}-{record.id}"


def _decode_cursor(cursor: str) -> tuple[datetime, str]:
    if not isinstance(cursor, str) or _CURSOR.fullmatch(cursor) is None:
        raise InvalidCursor("cursor is not one this service returned; list again without a cursor")
    micros, plan_id = cursor.split("-")
    return _EPOCH + timedelta(microseconds=int(micros)), plan_id  # at most 16 digits: about year 2286, no overflow


def _create_engine(url: str) -> Engine:
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):  # the driver optsched installs: psycopg 3
        parsed = parsed.set(drivername="postgresql+psycopg")
    if parsed.get_backend_name() != "sqlite":
        # A database host that stops answering is an outage within seconds (a 503, a worker's retry), never a hang.
        connect_args = {"connect_timeout": 5} if parsed.get_backend_name() == "postgresql" else {}
        return create_engine(parsed, pool_pre_ping=True, connect_args=connect_args)
    _create_private_file(parsed.database)
    engine = create_engine(url)

    @event.listens_for(engine, "connect")
    def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.close()

    with engine.connect() as c:
        c.execute(text("SELECT 1"))
    return engine


def _create_private_file(database: str | None) -> None:
    """Create the SQLite file (and its folder) readable by the owner only, before SQLite creates it 0644."""
    if not database or database == ":memory:" or database.startswith("file:"):
        return
    path = Path(database)
    _private_folder(path.parent)
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        pass


def _private_folder(folder: Path) -> None:
    """Create the folder and each missing parent 0700 (whatever the umask: mkdir's mode only takes bits away);
    an existing folder of ours that others may read is tightened to 0700 (never a sticky one such as /tmp)."""
    missing = []
    for parent in (folder, *folder.parents):
        if parent.exists():
            break
        missing.append(parent)
    for parent in reversed(missing):
        try:
            parent.mkdir(mode=0o700)
        except FileExistsError:
            pass
    info = folder.stat()
    if info.st_uid == os.getuid() and not info.st_mode & stat.S_ISVTX and info.st_mode & 0o077:
        log.warning("tightening %s from %o to 700: the plan store's folder is private to its owner", folder,
                    stat.S_IMODE(info.st_mode))
        os.chmod(folder, 0o700)
