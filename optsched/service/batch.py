"""`optsched batch`: fan many workloads out to a solve queue, wait for them, write each plan beside a summary.

The same store and `SolveQueue` the service uses: RQ workers when a queue URL is configured, else a local
`ProcessPool`. Every workload is keyed by the SHA-256 of its canonical JSON (`batch-sha256:<hex>` as the store's
idempotency key), so a rerun solves nothing that already has a finished plan: a workload whose hash the output
directory's `batch-summary.json` lists with a plan file is reused from there, and one the store already holds
(finished, or still queued or solving from an earlier run) is not submitted again. Rows that ended `failed` or
`cancelled` are submitted afresh.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from optsched.infra.queue import SolveQueue
from optsched.infra.rq.keys import redacted
from optsched.infra.store import UNFINISHED, JobState, PlanRecord, PlanStore
from optsched.schema.errors import InvalidWorkload, OptschedError
from optsched.schema.plan import FEASIBLE_STATUSES
from optsched.schema.workload import Workload
from optsched.service import resources
from optsched.service.queues import open_pool, open_rq_queue

SUMMARY_FILE = "batch-summary.json"
KEY_PREFIX = "batch-sha256:"
# States worth another solve on a rerun: the row holds no verdict on the workload.
RETRIED_STATES = (JobState.failed, JobState.cancelled)
_RETRIED = frozenset(s.value for s in RETRIED_STATES)
_FEASIBLE = frozenset(s.value for s in FEASIBLE_STATUSES)
_UNFINISHED = frozenset(s.value for s in UNFINISHED)


class InvalidBatch(OptschedError):
    """Some inputs cannot be read or are not valid workloads; `problems` lists every one (nothing was submitted)."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__(f"{len(problems)} problem(s) in the batch's inputs; fix them and run the batch again")


@dataclass(frozen=True)
class BatchInput:
    """One workload file: where it came from, the name its plan file takes, its hash and its document."""

    path: Path
    name: str
    sha256: str
    document: dict[str, Any]


@dataclass(frozen=True)
class BatchEntry:
    """The outcome of one workload, as `batch-summary.json` lists it."""

    workload: str
    name: str
    sha256: str
    id: str | None
    status: str
    objective: float | None = None
    power_w: float | None = None
    solve_seconds: float | None = None
    plan: str | None = None
    error: str | None = None
    reused: bool = False  # True: solved before this run (its plan came from the summary or the store)

    @property
    def final(self) -> bool:
        return self.status not in _UNFINISHED

    @property
    def feasible(self) -> bool:
        return self.status in _FEASIBLE


@dataclass
class BatchResult:
    entries: list[BatchEntry]
    summary_path: Path
    submitted: int  # rows this run submitted for solving (the others were reused)
    wall_seconds: float
    counts: Counter[str] = field(default_factory=Counter)

    @property
    def complete(self) -> bool:
        return all(e.final for e in self.entries)

    @property
    def all_feasible(self) -> bool:
        return all(e.feasible for e in self.entries)


def canonical_sha256(document: Any) -> str:
    """SHA-256 of the document's canonical JSON (sorted keys, no spaces): the same workload, the same hash."""
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def read_inputs(patterns: Sequence[str | Path]) -> list[BatchInput]:
    """Every workload the patterns name, read and validated; InvalidBatch lists every problem of every input."""
    paths, problems = collect_paths(patterns)
    loaded: list[tuple[Path, dict[str, Any]]] = []
    for path in paths:
        try:
            document = json.loads(path.read_text(), parse_constant=_reject_constant)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            problems.append(f"{path}: {exc}")
            continue
        try:
            Workload.load(document)
        except InvalidWorkload as exc:
            problems.extend(f"{path}: {e.path or '<document>'}: {e.message}" for e in exc.errors)
            continue
        loaded.append((path, document))
    if not paths and not problems:
        problems.append("no workload given")
    if problems:
        raise InvalidBatch(problems)
    stems = Counter(path.stem for path, _ in loaded)
    inputs = []
    for path, document in loaded:
        digest = canonical_sha256(document)
        name = path.stem if stems[path.stem] == 1 else f"{path.stem}-{digest[:8]}"
        inputs.append(BatchInput(path=path, name=name, sha256=digest, document=document))
    return inputs


def collect_paths(patterns: Sequence[str | Path]) -> tuple[list[Path], list[str]]:
    """Files named, `*.json` in directories named, and matches of glob patterns, in order, each once; and the
    patterns that name nothing."""
    found: list[Path] = []
    problems: list[str] = []
    for pattern in patterns:
        path = Path(pattern)
        if path.is_dir():
            matches = sorted(p for p in path.glob("*.json") if p.is_file())
            if not matches:
                problems.append(f"{pattern}: a directory with no *.json file")
        elif path.is_file():
            matches = [path]
        elif glob.has_magic(str(pattern)):
            matches = sorted(Path(p) for p in glob.glob(str(pattern)) if Path(p).is_file())
            if not matches:
                problems.append(f"{pattern}: matches no file")
        else:
            matches = []
            problems.append(f"{pattern}: no such file or directory")
        found.extend(matches)
    unique: dict[Path, Path] = {}
    for path in found:
        unique.setdefault(path.resolve(), path)
    return list(unique.values()), problems


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def submit(store: PlanStore, queue: SolveQueue, item: BatchInput) -> tuple[PlanRecord, bool]:
    """The store's row for this workload, submitting it unless one with a verdict (or on its way) exists."""
    done = resources.submit(store, queue, item.document, idempotency_key=KEY_PREFIX + item.sha256,
                            replace_states=RETRIED_STATES)
    return done.record, done.created


def previous_entries(out_dir: Path) -> dict[str, BatchEntry]:
    """Finished entries of an earlier run's summary whose plan file is still there, by input hash."""
    try:
        summary = json.loads((out_dir / SUMMARY_FILE).read_text())
        entries = [BatchEntry(**e) for e in summary["workloads"]]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return {
        e.sha256: e
        for e in entries
        if e.final and e.status not in _RETRIED and e.plan and (out_dir / e.plan).is_file()
    }


Progress = Callable[[int, int, Counter[str]], None]  # (finished, total, count by status)


def run_batch(
    inputs: Sequence[BatchInput],
    out_dir: Path,
    *,
    store: PlanStore,
    queue: SolveQueue,
    wait: bool = True,
    timeout_s: float | None = None,
    poll_s: float = 0.25,
    progress: Progress | None = None,
    queue_label: str = "",
) -> BatchResult:
    """Submit every input not solved before, wait (if `wait`) until all are final, write plans and summary."""
    started = time.monotonic()
    out_dir.mkdir(parents=True, exist_ok=True)
    done_before = previous_entries(out_dir)
    earlier = {item.sha256: done_before[item.sha256] for item in inputs if item.sha256 in done_before}
    rows: dict[str, PlanRecord] = {}  # input hash -> store row
    solved_here: set[str] = set()
    for item in inputs:
        if item.sha256 in earlier:
            continue
        record, created = submit(store, queue, item)
        rows[item.sha256] = record
        if created:
            solved_here.add(item.sha256)
    if any(not r.status.final for r in rows.values()):
        queue.start()  # only now: a rerun with nothing left to solve starts no solver process
    deadline = None if timeout_s is None else started + timeout_s
    while True:
        for digest, record in rows.items():
            if not record.status.final:
                rows[digest] = store.get(record.id) or record
        counts = Counter(
            rows[item.sha256].outcome if item.sha256 in rows else earlier[item.sha256].status for item in inputs
        )
        finished = sum(n for s, n in counts.items() if s not in _UNFINISHED)
        if progress is not None:
            progress(finished, len(inputs), counts)
        if not wait or finished == len(inputs) or (deadline is not None and time.monotonic() >= deadline):
            break
        time.sleep(poll_s)
    entries = []
    for item in inputs:
        if item.sha256 in rows:
            entries.append(_write_entry(out_dir, item, rows[item.sha256], reused=item.sha256 not in solved_here))
        else:
            entries.append(_reused(earlier[item.sha256], item))
    wall = time.monotonic() - started
    summary_path = out_dir / SUMMARY_FILE
    counts = Counter(e.status for e in entries)
    summary = {
        "created_at": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        "queue": queue_label,
        "workloads_total": len(entries),
        "submitted_by_this_run": len(solved_here),
        "by_status": dict(sorted(counts.items())),
        "wall_seconds": round(wall, 3),
        "workloads": [e.__dict__ for e in entries],
    }
    write_atomically(summary_path, json.dumps(summary, indent=2) + "\n")
    return BatchResult(entries=entries, summary_path=summary_path, submitted=len(solved_here), wall_seconds=wall,
                       counts=counts)


def _reused(entry: BatchEntry, item: BatchInput) -> BatchEntry:
    return BatchEntry(**{**entry.__dict__, "workload": str(item.path), "name": item.name, "reused": True})


def _write_entry(out_dir: Path, item: BatchInput, record: PlanRecord, *, reused: bool) -> BatchEntry:
    document = record.plan
    plan_file = None
    if document is not None:
        plan_file = f"{item.name}.plan.json"
        write_atomically(out_dir / plan_file, json.dumps(document, indent=2) + "\n")
    return BatchEntry(
        workload=str(item.path),
        name=item.name,
        sha256=item.sha256,
        id=record.id,
        status=record.outcome,
        objective=(document or {}).get("objective"),
        power_w=(document or {}).get("power_w"),
        solve_seconds=(document or {}).get("solve_seconds"),
        plan=plan_file,
        error=record.error,
        reused=reused,
    )



LOCAL_STORE = ".optsched-batch.db"


@dataclass
class Backend:
    """Where a batch's rows live and who solves them."""

    store: PlanStore
    queue: SolveQueue
    label: str
    local: bool

    def close(self) -> None:
        self.queue.stop()
        self.store.close()


def open_backend(
    out_dir: Path,
    *,
    queue_url: str | None,
    queue_name: str,
    database_url: str | None,
    workers: int | None = None,
    grace_s: float = 5.0,
    solver_threads: int | None = 1,
) -> Backend:
    """RQ workers when `queue_url` is set (the store must be the one they use), else local solver processes;
    the store is `database_url`, or without one a SQLite file in `out_dir` (so that reruns find their rows).
    `run_batch` starts the queue once it has something to solve."""
    settings = {"QUEUE_URL": queue_url, "QUEUE_NAME": queue_name, "QUEUE_SIZE": 1_000_000, "WORKERS": workers,
                "MAX_SOLVES_PER_WORKER": 50, "SOLVE_GRACE_S": grace_s, "SOLVER_THREADS": solver_threads}
    if queue_url:
        if not database_url:
            raise InvalidBatch(["OPTSCHED_QUEUE_URL is set but OPTSCHED_DATABASE_URL is not: set both to what the "
                                "workers use (PostgreSQL), or neither to solve locally"])
        store = PlanStore(database_url)
        rq_queue = open_rq_queue(store, settings)
        rq_queue.keys.redis.ping()  # fail now, not halfway through the submissions
        label = f"rq {redacted(queue_url)} queue {queue_name}"
        queue: SolveQueue = rq_queue
        local = False
    else:
        out_dir.mkdir(parents=True, exist_ok=True)
        store = PlanStore(database_url or f"sqlite:///{(out_dir / LOCAL_STORE).resolve()}")
        pool = open_pool(store, settings)
        label, queue, local = f"local ({pool.size} processes)", pool, True
    return Backend(store=store, queue=queue, label=label, local=local)

def write_atomically(path: Path, text: str) -> None:
    """Write beside the target, then rename over it: a reader sees the old file or the new one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
