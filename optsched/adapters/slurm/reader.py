"""Slurm -> optsched: the available nodes and the held pending jobs as a Workload (now) or a NightQueue (a night
that starts at `start`), validated like any other. Jobs that cannot be planned are listed with their reason."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from optsched.adapters.slurm.comment import profile_from_comment
from optsched.adapters.slurm.runner import SlurmInputError, SlurmRunner
from optsched.adapters.slurm.site import DEFAULT_TYPES, Profile, Site
from optsched.adapters.slurm.snapshot import Node, SlurmJob, Snapshot, read_snapshot
from optsched.schema.night import NightDefaults, NightQueue
from optsched.schema.workload import Workload

log = logging.getLogger(__name__)

HOUR_S = 3600.0


@dataclass(frozen=True)
class Skipped:
    id: str  # a job id or a node name
    reason: str

    def __str__(self) -> str:
        return self.reason


@dataclass(frozen=True)
class ImportResult:
    workload: Workload  # a NightQueue when imported for a night
    snapshot: Snapshot
    skipped: tuple[Skipped, ...]  # held jobs left out of the plan, each with its reason
    unavailable: tuple[Skipped, ...]  # nodes left out (down, drained, odd state, no free GPU)
    start: datetime | None = None  # the night's start (night queues)


def import_cluster(
    site: Site, runner: SlurmRunner, *, night_start: datetime | None = None, name: str = "slurm"
) -> ImportResult:
    """The live cluster's held pending jobs as a Workload, or with `night_start` as a NightQueue.

    SlurmInputError names every available node whose GPU type the site does not map (nothing can be planned on
    it safely), or every node when none can take jobs."""
    return build_import(site, read_snapshot(runner), night_start=night_start, name=name, now=time.time())


def build_import(
    site: Site, snapshot: Snapshot, *, night_start: datetime | None, name: str, now: float
) -> ImportResult:
    """import_cluster on a snapshot already read, at clock `now` (epoch seconds)."""
    unknown = [problem for n in snapshot.nodes if n.available and (problem := _type_problem(site, n))]
    if unknown:
        raise SlurmInputError(unknown)
    unavailable = [Skipped(n.name, n.problem) for n in snapshot.nodes if n.problem is not None]
    unavailable += [
        Skipped(n.name, f"node {n.name}: all {n.gpus} GPUs are in use")
        for n in snapshot.nodes
        if n.available and n.gpus_free == 0
    ]
    usable = [n for n in snapshot.nodes if n.available and n.gpus_free > 0]
    if not usable:
        raise SlurmInputError(["no node can take jobs now", *(s.reason for s in unavailable)])
    devices = [device_group(site, n) for n in usable]

    held = [j for j in snapshot.jobs if j.held]
    jobs: list[dict[str, Any]] = []
    skipped: list[Skipped] = []
    begin = night_start.timestamp() if night_start is not None else now
    for job in held:
        try:
            jobs.append(_job(site, job, night=night_start is not None, begin=begin))
        except ValueError as err:
            skipped.append(Skipped(job.id, f"job {job.id} ({job.name}): {err}"))
    # A job whose dependency was left out cannot be planned either (repeat: chains of them).
    while True:
        kept = {j["id"] for j in jobs}
        orphans = [j for j in jobs if set(j.get("after", ())) - kept]
        if not orphans:
            break
        for j in orphans:
            missing = sorted(set(j["after"]) - kept)
            skipped.append(
                Skipped(j["id"], f"job {j['id']}: depends on job(s) {', '.join(missing)}, which optsched does not plan")
            )
        jobs = [j for j in jobs if j not in orphans]

    power: dict[str, Any] = {"budget_w": site.budget_w}
    power["domains"] = {d.id: d.budget_w for d in site.domains if d.budget_w is not None}
    document: dict[str, Any] = {"name": name, "devices": devices, "jobs": jobs, "power": power}
    if night_start is not None:
        # Slurm cannot move or resize a running job: the night's plan keeps each job where it starts.
        document["defaults"] = NightDefaults(elastic=False).model_dump(mode="json")
        workload: Workload = NightQueue.load(document)
    else:
        workload = Workload.load(document)
    for s in (*unavailable, *skipped):
        log.info("left out: %s", s.reason)
    return ImportResult(workload, snapshot, tuple(skipped), tuple(unavailable), night_start)


def gpu_model(site: Site, node: Node) -> str | None:
    """The catalog model of the node's GPUs: its GRES type's, else (untyped GRES) the first feature the site maps."""
    if node.gpu_type is not None:
        return site.model_of(node.gpu_type)
    return next((m for f in node.features if (m := site.model_of(f)) is not None), None)


def _type_problem(site: Site, node: Node) -> str | None:
    if gpu_model(site, node) is not None:
        return None
    known = ", ".join(sorted(DEFAULT_TYPES))
    if node.gpu_type is not None:
        return (
            f"node {node.name}: GRES type {node.gpu_type!r} is neither a default ({known}) nor in the site "
            'file\'s "types"; add it there'
        )
    return (
        f"node {node.name}: its GRES names no GPU type and none of its features ({', '.join(node.features) or 'none'}) "
        'is one the site maps; type the GPUs in gres.conf or map a feature in the site file\'s "types"'
    )


def device_group(site: Site, node: Node) -> dict[str, Any]:
    """The node as a workload device group (document form): its free GPUs, their model, its power domain."""
    device: dict[str, Any] = {"id": node.name, "model": gpu_model(site, node), "count": node.gpus_free}
    domain = site.domain_of(node.name)
    if domain is not None:
        device["domain"] = domain
    return device


def _job(site: Site, job: SlurmJob, *, night: bool, begin: float) -> dict[str, Any]:
    """The workload job for a held Slurm job; ValueError with the reason it cannot be planned."""
    if not job.gpus:
        raise ValueError("asks for no GPU (submit with --gres=gpu:N)")
    if job.gpu_type is not None and site.model_of(job.gpu_type) is None:
        raise ValueError(f'asks for GRES type {job.gpu_type!r}, which no default and no site "types" entry maps')
    if job.other_dependency:
        raise ValueError(f"dependency {job.other_dependency!r} is not afterok; optsched plans afterok only")
    profile = _profile(site, job)
    if profile is None:
        raise ValueError(
            'has no profile: submit with --comment "optsched:work_hours=H,parallel_fraction=P" or add a site '
            '"profiles" entry matching its name'
        )
    max_devices = min(job.gpus, profile.max_devices or job.gpus)
    out: dict[str, Any] = {
        "id": job.id,
        "work_hours": profile.work_hours,
        "parallel_fraction": profile.parallel_fraction,
        "priority": (
            profile.priority or site.priorities.get(job.qos) or site.priorities.get(job.partition) or "normal"
        ),
        "max_devices": max_devices,
        "min_devices": min(profile.min_devices or 1, max_devices),
    }
    if profile.weight is not None:
        out["weight"] = profile.weight
    team = site.team_of(job.account)
    if team is not None:
        out["team"] = team
    deadline = profile.deadline_hours
    if job.deadline:
        deadline = min(deadline or float("inf"), (job.deadline - begin) / HOUR_S)
        if deadline <= 0:
            raise ValueError("its --deadline has passed")
    if deadline is not None:
        out["deadline_hours"] = deadline
    if job.gpu_type is not None:
        out["allowed_models"] = [site.model_of(job.gpu_type)]
    if night:
        if job.eligible_time > begin:
            out["release_hours"] = (job.eligible_time - begin) / HOUR_S
        out["after"] = list(job.after)
    elif job.after:
        raise ValueError(f"waits for job(s) {', '.join(job.after)} (afterok); plan it with the night queue (--night)")
    return out


def _profile(site: Site, job: SlurmJob) -> Profile | None:
    from_comment = profile_from_comment(job.comment)
    return from_comment if from_comment is not None else site.profile_for(job.name)
