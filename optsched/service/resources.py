"""One path per use case on a stored resource (plan, night plan, frontier, ...): submit with idempotency,
cancel, delete. The REST views, `optsched batch` and the CLI call these; none writes the store or queue itself.
Every one acts for a team (optsched.service.tenants): it sees, replays and deletes that team's resources only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from optsched.infra.queue import SolveQueue
from optsched.infra.store import DEFAULT_TEAM, JobState, PlanRecord, PlanStore
from optsched.schema.errors import OptschedError
from optsched.service.kinds import KINDS, KindSpec
from optsched.service.tenants import Admission


class IdempotencyConflict(OptschedError):
    """The Idempotency-Key was used for another kind, document or parameters."""


class NotFound(OptschedError):
    """No resource of that kind with that id (or it went away meanwhile)."""


@dataclass(frozen=True)
class Submitted:
    record: PlanRecord
    created: bool  # False: an earlier resource with the same idempotency key is returned instead


def submit(
    store: PlanStore,
    queue: SolveQueue,
    document: Any,
    *,
    kind: KindSpec = KINDS["plan"],
    params: dict[str, Any] | None = None,
    idempotency_key: str | None = None,
    replace_states: Iterable[JobState] = (),
    team: str = DEFAULT_TEAM,
    admission: Admission | None = None,
) -> Submitted:
    """Store the resource of `team` and queue its solve, in that order, so that a failed enqueue leaves no row behind.

    With a key the team used already, the earlier resource is returned (IdempotencyConflict when it was for another
    kind, document or parameters) unless its state is in `replace_states`, in which case it is replaced by a
    new one (batch reruns solve again what failed or was cancelled). A new resource is admitted (`admission`:
    TeamQueueFull past the team's queue share, QuotaExceeded past its storage quota) in the transaction that
    inserts it; a retry of a stored one is answered whatever the team holds.
    """
    params = params or {}
    replace = tuple(replace_states)
    # Admitted in the insert's transaction, under the team's lock: concurrent submits cannot both pass a share.
    admit = None if admission is None else partial(admission.judge, team)
    existing = store.get_by_key(idempotency_key, team) if idempotency_key is not None else None
    if existing is not None:
        record, created = existing, False
    else:
        record, created = store.create(document, idempotency_key, kind=kind.name, params=params, team=team,
                                       admit=admit)
    if not created and record.status in replace:
        store.delete(record.id, states=replace)
        record, created = store.create(document, idempotency_key, kind=kind.name, params=params, team=team,
                                       admit=admit)
    if not created:
        if (record.kind, canonical(record.workload), canonical(record.params or {})) != (
            kind.name, canonical(document), canonical(params)
        ):
            raise IdempotencyConflict(
                f"this Idempotency-Key was used for a different request; use a new key for a new {kind.name}"
            )
        return Submitted(record, created=False)
    try:
        queue.submit(record.id)
    except Exception:
        store.delete(record.id, states=[record.status])
        raise
    return Submitted(record, created=True)


def cancel_or_delete(
    store: PlanStore,
    queue: SolveQueue,
    kind: KindSpec,
    resource_id: str,
    *,
    requested_at: datetime | None = None,
    replay_s: float = 0.0,
    team: str = DEFAULT_TEAM,
) -> PlanRecord | None:
    """Cancel an unfinished resource of `team` (the record as it now is: `cancelled`, or the final state its solve
    reached first), delete a finished one (None); NotFound otherwise (another team's resource too).

    Idempotent under retries and concurrency: a resource is deleted only if it was final before the request
    (`requested_at`, when the caller received it) and, when cancelled, cancelled more than `replay_s` before it.
    So several DELETEs sent at once, or a DELETE retried soon after, all answer with the cancelled record and
    none deletes it; a DELETE after that deletes it."""
    record = store.get(resource_id, kind=kind.name, team=team)
    if record is None:
        raise NotFound(f"no {kind.name} {resource_id!r}")
    if not record.status.final:
        cancelled = queue.cancel(record.id)
        if cancelled is None:
            raise NotFound(f"no {kind.name} {resource_id!r}")
        return cancelled
    if requested_at is not None:
        kept_until = _utc(record.finished_at) + timedelta(
            seconds=replay_s if record.status is JobState.cancelled else 0.0
        )
        if kept_until >= _utc(requested_at):
            return record  # cancelled just now (a retry, a concurrent DELETE), or its solve ended meanwhile
    if store.delete(record.id):
        return None
    raise NotFound(f"no {kind.name} {resource_id!r}")


def list_resources(
    store: PlanStore,
    kind: KindSpec,
    *,
    limit: int = 20,
    cursor: str | None = None,
    status: str | None = None,
    team: str = DEFAULT_TEAM,
) -> tuple[list[PlanRecord], str | None]:
    """One page of a kind's resources of `team`, newest first; `status` is the word a resource shows: a lifecycle
    state (queued, solving, cancelled, failed) or a verdict of a finished solve (optimal, met, done, ...)."""
    if status is None:
        return store.list(limit=limit, cursor=cursor, kind=kind.name, team=team)
    if status in _LIFECYCLE_WORDS:
        return store.list(limit=limit, cursor=cursor, kind=kind.name, status=JobState(status), team=team)
    return store.list(limit=limit, cursor=cursor, kind=kind.name, status=JobState.finished, verdict=status, team=team)


# The statuses that are lifecycle states; `finished` never shows: a finished resource shows its verdict.
_LIFECYCLE_WORDS = frozenset(s.value for s in JobState if s is not JobState.finished)


def _utc(moment: datetime | None) -> datetime:
    if moment is None:
        return datetime.min.replace(tzinfo=UTC)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def canonical(document: Any) -> str:
    """The document as compact sorted JSON: equal documents, equal text."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"))
