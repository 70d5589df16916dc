"""What Slurm reports, typed: the nodes from `sinfo --json` and the jobs from `squeue --json` (Slurm 22.05's
layout, openapi v0.0.38). Output of another layout is refused with the version and the first fields that differ."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from optsched.adapters.slurm.runner import SlurmInputError, SlurmRunner

SINFO = ("sinfo", "--json")
SQUEUE = ("squeue", "--json")
# Base states in which a node takes jobs; every other one (down, drained, inval, future, unknown...) makes it
# unavailable, as does any of the flags below.
WORKING_STATES = frozenset({"idle", "mixed", "allocated", "completing"})
BAD_FLAGS = frozenset(
    {
        "DRAIN",
        "DRAINING",
        "DRAINED",
        "DOWN",
        "FAIL",
        "FAILING",
        "MAINTENANCE",
        "MAINT",
        "NOT_RESPONDING",
        "POWERED_DOWN",
        "POWER_DOWN",
        "POWERING_DOWN",
        "REBOOT_REQUESTED",
        "REBOOT_ISSUED",
        "INVALID",
        "INVALID_REG",
        "UNKNOWN",
        "FUTURE",
    }
)
KNOWN_STATES = WORKING_STATES | frozenset(
    {
        "down",
        "drained",
        "draining",
        "inval",
        "future",
        "unknown",
        "error",
        "fail",
        "failing",
        "maint",
        "planned",
        "reboot_issued",
        "reboot_requested",
        "power_down",
        "powered_down",
        "powering_down",
        "powering_up",
    }
)
HELD_REASONS = frozenset({"JobHeldUser", "JobHeldAdmin"})
_GRES = re.compile(r"^gpu(?::(?P<type>[^:(]+))?:(?P<count>\d+)")
_AFTEROK = re.compile(r"afterok:([\d:_]+)")


class _Read(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", strict=True)


class _Node(_Read):
    name: str
    state: str
    state_flags: list[str] = Field(default_factory=list)
    gres: str
    gres_used: str
    features: str = ""
    reason: str = ""


class _Job(_Read):
    job_id: int
    name: str
    job_state: str
    state_reason: str
    comment: str
    tres_per_node: str
    features: str
    required_nodes: str
    dependency: str
    eligible_time: int
    deadline: int
    qos: str
    partition: str
    priority: int
    nodes: str
    account: str = ""


@dataclass(frozen=True)
class Node:
    name: str
    gpu_type: str | None  # the GRES type of its GPUs (None: untyped, or no GPU)
    features: tuple[str, ...]
    gpus: int
    gpus_used: int
    state: str
    flags: tuple[str, ...]
    reason: str
    problem: str | None  # why it cannot take jobs (None: it can)

    @property
    def available(self) -> bool:
        return self.problem is None

    @property
    def gpus_free(self) -> int:
        return max(self.gpus - self.gpus_used, 0)


@dataclass(frozen=True)
class SlurmJob:
    id: str
    name: str
    state: str
    reason: str
    comment: str
    gpus: int | None  # GPUs per node it asks for (None: none)
    gpu_type: str | None  # a typed request (gpu:h100:2), None for gpu:2
    features: str
    required_nodes: str
    after: tuple[str, ...]  # afterok dependencies on other jobs
    other_dependency: str  # the dependency text when it is not afterok alone
    eligible_time: int  # epoch seconds the job may start from (0: not set)
    deadline: int  # epoch seconds (0: none)
    qos: str
    partition: str
    nodes: str  # where it runs (running jobs)
    account: str = ""  # the Slurm account it is charged to ("" when none)

    @property
    def pending(self) -> bool:
        return self.state == "PENDING"

    @property
    def held(self) -> bool:
        return self.pending and self.reason in HELD_REASONS


@dataclass(frozen=True)
class Snapshot:
    nodes: tuple[Node, ...]
    jobs: tuple[SlurmJob, ...]

    def node(self, name: str) -> Node | None:
        return next((n for n in self.nodes if n.name == name), None)

    def job(self, job_id: str) -> SlurmJob | None:
        return next((j for j in self.jobs if j.id == job_id), None)


def read_snapshot(runner: SlurmRunner) -> Snapshot:
    return Snapshot(nodes=parse_nodes(runner.json(SINFO)), jobs=parse_jobs(runner.json(SQUEUE)))


def _version(document: Mapping[str, Any]) -> str:
    """ "Slurm 22.05.8 (openapi/v0.0.38)", from the output's meta, as far as it says."""
    meta = document.get("meta")
    meta = meta if isinstance(meta, dict) else {}
    slurm = meta.get("Slurm") or meta.get("slurm")
    release = slurm.get("release") if isinstance(slurm, dict) else None
    plugin = meta.get("plugin")
    kind = plugin.get("type") if isinstance(plugin, dict) else None
    return f"Slurm {release or 'of unknown version'} ({kind or 'no plugin named'})"


def _rows(document: Mapping[str, Any], key: str, model: type[_Read], label: str, command: str) -> list[Any]:
    items = document.get(key)
    if not isinstance(items, list):
        raise SlurmInputError(
            [f"{command}: output of {_version(document)} has no '{key}' list; optsched reads Slurm 22.05's"]
        )
    rows, problems = [], []
    for i, item in enumerate(items):
        try:
            rows.append(model.model_validate(item))
        except ValidationError as err:
            who = item.get(label, f"#{i}") if isinstance(item, dict) else f"#{i}"
            fields = "; ".join(
                f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in err.errors(include_url=False)[:3]
            )
            problems.append(
                f"{command}: {key[:-1]} {who}: output of {_version(document)} is not the Slurm 22.05 layout "
                f"optsched reads ({fields})"
            )
    if problems:
        raise SlurmInputError(problems)
    return rows


def parse_nodes(document: Mapping[str, Any]) -> tuple[Node, ...]:
    nodes = []
    for row in _rows(document, "nodes", _Node, "name", "sinfo --json"):
        nodes.append(_node(row))
    return tuple(nodes)


def _node(row: _Node) -> Node:
    gres = [g for g in row.gres.split(",") if g.startswith("gpu")] if row.gres not in ("", "(null)") else []
    types = [_GRES.match(g) for g in gres]
    parsed = [m for m in types if m is not None]
    gpu_type = parsed[0].group("type") if parsed else None
    gpus = sum(int(m.group("count")) for m in parsed)
    used = sum(int(m.group("count")) for m in map(_GRES.match, row.gres_used.split(",")) if m is not None)
    state = row.state.lower()
    flags = tuple(f.upper() for f in row.state_flags)
    problem = None
    if state not in KNOWN_STATES:
        problem = f"node {row.name}: unknown state {row.state!r}; optsched plans nothing on it"
    elif state not in WORKING_STATES or BAD_FLAGS & set(flags):
        shown = "+".join((state, *flags))
        problem = f"node {row.name} is {shown}" + (f" ({row.reason})" if row.reason else "")
    elif len({m.group("type") for m in parsed}) > 1:
        problem = f"node {row.name} has GPUs of several types ({row.gres}); optsched plans one type per node"
    elif not parsed:
        problem = f"node {row.name} has no GPU in its GRES ({row.gres or 'none'})"
    return Node(
        name=row.name,
        gpu_type=gpu_type,
        features=tuple(f for f in row.features.split(",") if f and f != "(null)"),
        gpus=gpus,
        gpus_used=used,
        state=state,
        flags=flags,
        reason=row.reason,
        problem=problem,
    )


def parse_jobs(document: Mapping[str, Any]) -> tuple[SlurmJob, ...]:
    return tuple(_job(row) for row in _rows(document, "jobs", _Job, "job_id", "squeue --json"))


def _job(row: _Job) -> SlurmJob:
    request = row.tres_per_node.removeprefix("gres:")
    match = _GRES.match(request) if request else None
    dependency = re.sub(r"\((unfulfilled|failed)\)", "", row.dependency)
    after = tuple(i for ids in _AFTEROK.findall(dependency) for i in ids.split(":") if i)
    other = _AFTEROK.sub("", dependency).strip(",?& ")
    return SlurmJob(
        id=str(row.job_id),
        name=row.name,
        state=row.job_state,
        reason=row.state_reason,
        comment=row.comment,
        gpus=int(match.group("count")) if match else None,
        gpu_type=match.group("type") if match else None,
        features=row.features,
        required_nodes=row.required_nodes,
        after=after,
        other_dependency=other,
        eligible_time=row.eligible_time,
        deadline=row.deadline,
        qos=row.qos,
        partition=row.partition,
        nodes=row.nodes,
        account=row.account,
    )
