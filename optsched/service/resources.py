"""One path per use case on a stored resource (plan, night plan, frontier, ...): submit with idempotency,
cancel, delete. The REST views, `optsched batch` and the CLI call these; none writes the store or queue itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable

from optsched.infra.pool import SolveQueue
from optsched.infra.store import PlanRecord, PlanState, PlanStore, ResourceKind
from optsched.schema.errors import OptschedError


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
    document: dict[str, Any],
    *,
    kind: ResourceKind = ResourceKind.plan,
    params: dict[str, Any] | None = None,
    idempotency_key: str | None = None,
    replace_states: Iterable[PlanState] = (),
) -> Submitted:
    """Store the resource and queue its solve, in that order, so that a failed enqueue leaves no row behind.

    With a used idempotency key, the earlier resource is returned (IdempotencyConflict when it was for another
    kind, document or parameters) unless its state is in `replace_states`, in which case it is replaced by a
    new one (batch reruns solve again what failed or was cancelled).
    """
    params = params or {}
    replace = tuple(replace_states)
    record, created = store.create(document, idempotency_key, kind=kind, params=params)
    if not created and record.status in replace:
        store.delete(record.id, states=replace)
        record, created = store.create(document, idempotency_key, kind=kind, params=params)
    if not created:
        if (record.kind, canonical(record.workload), canonical(record.params or {})) != (
            kind, canonical(document), canonical(params)
        ):
            raise IdempotencyConflict(
                f"this Idempotency-Key was used for a different request; use a new key for a new {kind.value}"
            )
        return Submitted(record, created=False)
    try:
        queue.submit(record.id)
    except Exception:
        store.delete(record.id, states=[record.status])
        raise
    return Submitted(record, created=True)


def cancel_or_delete(store: PlanStore, queue: SolveQueue, kind: ResourceKind, resource_id: str) -> PlanRecord | None:
    """Cancel an unfinished resource (the cancelled record), delete a finished one (None); NotFound otherwise."""
    record = store.get(resource_id, kind=kind)
    if record is None:
        raise NotFound(f"no {kind.value} {resource_id!r}")
    if record.status.final:
        if store.delete(record.id):
            return None
        raise NotFound(f"no {kind.value} {resource_id!r}")
    cancelled = queue.cancel(record.id)
    if cancelled is None:
        raise NotFound(f"no {kind.value} {resource_id!r}")
    return cancelled


def canonical(document: Any) -> str:
    """The document as compact sorted JSON: equal documents, equal text."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"))
