"""The operator's loops on top of import and apply: plan what is held now, plan the night, and watch the nodes
(re-plan with the fewest moves when one goes DOWN or DRAIN, apply, and record the decision)."""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from optsched.adapters.slurm.apply import ApplyReport, apply_night, apply_plan
from optsched.adapters.slurm.reader import ImportResult, device_group, gpu_model, import_cluster
from optsched.adapters.slurm.runner import SlurmInputError, SlurmRunner
from optsched.adapters.slurm.shape import one_node_per_job
from optsched.adapters.slurm.site import Site
from optsched.adapters.slurm.snapshot import Node, read_snapshot
from optsched.explain.planning import plan as plan_workload
from optsched.night import plan_night
from optsched.night.planner import CANDIDATE_NAMES, SLOTTED_NAME, SLOTTED_RESERVED_NAME
from optsched.replan import Change, ChangeKind, DeviceCount, Reason, replan
from optsched.replan.schema import MOVES
from optsched.schema.night import NightPlan, NightQueue
from optsched.schema.plan import Plan
from optsched.schema.workload import Workload
from optsched.verify.placement import verify

log = logging.getLogger(__name__)

PLAN_TIME_LIMIT_S = 10.0
# The night's candidates that keep each job on one group from start to end (the event MILP candidates may spread a
# job over several nodes, which a Slurm job cannot be given; the slotted ones start each job on one group);
# apply_night still refuses any timeline Slurm cannot carry.
NIGHT_CANDIDATES = (*(c for c in CANDIDATE_NAMES if c.startswith("dispatch-")), SLOTTED_NAME, SLOTTED_RESERVED_NAME)


def plan_for_slurm(workload: Workload, *, time_limit_s: float = PLAN_TIME_LIMIT_S) -> Plan:
    """optsched.plan with each job on one node (what Slurm can run), verified."""
    plan = plan_workload(workload, time_limit_s=time_limit_s, extra_functionality=one_node_per_job)
    problems = verify(workload, plan)
    if problems:
        raise SlurmInputError([f"plan: {p}" for p in problems])
    return plan


@dataclass(frozen=True)
class NightRun:
    imported: ImportResult
    plan: NightPlan
    report: ApplyReport
    seconds: dict[str, float]  # import, plan, apply


def run_night(
    site: Site,
    runner: SlurmRunner,
    *,
    start: datetime,
    hours: float,
    dry_run: bool = False,
    seconds_per_hour: float = 3600.0,
    time_limit_s: float | None = None,
) -> NightRun:
    """Import the held jobs as the night's queue, plan the night, apply it (begin times, releases in order)."""
    t0 = time.monotonic()
    imported = import_cluster(site, runner, night_start=start)
    t1 = time.monotonic()
    queue = imported.workload
    assert isinstance(queue, NightQueue)
    night = plan_night(queue, start=start, hours=hours, time_limit_s=time_limit_s, candidates=NIGHT_CANDIDATES)
    t2 = time.monotonic()
    report = apply_night(queue, night, runner, dry_run=dry_run, seconds_per_hour=seconds_per_hour)
    t3 = time.monotonic()
    return NightRun(imported, night, report, {"import": t1 - t0, "plan": t2 - t1, "apply": t3 - t2})


class WatchState:
    """The folder where watch keeps what was applied last (workload.json, plan.json) and every decision
    (decisions.jsonl, one JSON object per line)."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)

    def load(self) -> tuple[Workload, Plan] | None:
        w, p = self.folder / "workload.json", self.folder / "plan.json"
        if not (w.exists() and p.exists()):
            return None
        return Workload.load(w), Plan.model_validate_json(p.read_text("utf-8"))

    def save(self, workload: Workload, plan: Plan) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        for name, text in (
            ("workload.json", workload.model_dump_json(indent=2, exclude_defaults=True)),
            ("plan.json", plan.model_dump_json(indent=2)),
        ):
            tmp = self.folder / f".{name}.tmp"
            tmp.write_text(text + "\n", encoding="utf-8")
            tmp.replace(self.folder / name)

    def record(self, decision: dict[str, Any]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / "decisions.jsonl", "a", encoding="utf-8") as out:
            out.write(json.dumps(decision) + "\n")

    def decisions(self) -> list[dict[str, Any]]:
        path = self.folder / "decisions.jsonl"
        return [json.loads(line) for line in path.read_text("utf-8").splitlines()] if path.exists() else []


@dataclass(frozen=True)
class WatchDecision:
    kind: str  # "initial": first plan applied; "replan": nodes went away or came back; "none": nothing changed
    failed_nodes: tuple[str, ...]
    moved: tuple[str, ...]
    report: ApplyReport | None
    record: dict[str, Any]
    returned_nodes: tuple[str, ...] = ()


def watch_once(
    site: Site, runner: SlurmRunner, state: WatchState, *, time_limit_s: float = PLAN_TIME_LIMIT_S
) -> WatchDecision:
    """One poll: with no plan applied yet, import, plan and apply one; else, when nodes of the applied plan are
    now DOWN, DRAIN or otherwise unavailable, or nodes it lacks are back in service, re-plan with the fewest
    moves (optsched.replan), apply, record."""
    previous = state.load()
    if previous is None:
        imported = import_cluster(site, runner)
        plan = plan_for_slurm(imported.workload, time_limit_s=time_limit_s)
        report = apply_plan(imported.workload, plan, runner)
        state.save(imported.workload, plan)
        record = _record("initial", (), (), report, [s.reason for s in imported.skipped])
        state.record(record)
        return WatchDecision("initial", (), (), report, record)
    workload, plan = previous
    snapshot = read_snapshot(runner)
    nodes = {n.name: n for n in snapshot.nodes}
    failed = tuple(g.id for g in workload.devices if g.id not in nodes or not nodes[g.id].available)
    groups = {g.id for g in workload.devices}
    returned = tuple(
        n.name
        for n in snapshot.nodes
        if n.name not in groups and n.available and n.gpus_free > 0 and gpu_model(site, n) is not None
    )
    if not failed and not returned:
        return WatchDecision("none", (), (), None, _record("none", (), (), None, []))
    why = [nodes[n].problem if n in nodes else f"node {n} left the cluster" for n in failed]
    why += [f"node {n} is in service again" for n in returned]
    if returned:
        workload = _with_nodes(workload, site, [nodes[n] for n in returned])
    log.warning("re-planning: %s", "; ".join(str(w) for w in why))
    # Slurm does not move a running job: one on a healthy node keeps its GPUs (pinned); one on a failed node, or
    # one that finished or vanished, leaves the plan (its GPUs there are gone, or free again).
    placed = {p.job: {a.device for a in p.allocations} for p in plan.placements if p.admitted}
    remove: list[str] = []
    pin: list[str] = []
    for job in workload.jobs:
        now = snapshot.job(job.id)
        if now is None or now.state not in ("PENDING", "RUNNING", "CONFIGURING"):
            remove.append(job.id)
        elif not now.pending and job.id in placed:
            (remove if placed[job.id] & set(failed) else pin).append(job.id)
    change = Change(
        device_failures=tuple(DeviceCount(device=g.id, count=g.count) for g in workload.devices if g.id in failed),
        remove_jobs=tuple(remove),
        pin=tuple(pin),
    )
    result = replan(workload, plan, change, time_limit_s=time_limit_s, extra_functionality=one_node_per_job)
    problems = verify(result.workload, result.plan)
    if problems:
        raise SlurmInputError([f"re-plan: {p}" for p in problems])
    moved = tuple(c.job for c in result.changes if c.kind in MOVES and c.reason is not Reason.removed)
    report = apply_plan(result.workload, result.plan, runner)
    state.save(result.workload, result.plan)
    record = _record("replan", failed, moved, report, [str(w) for w in why])
    record["returned_nodes"] = list(returned)
    record["changes"] = [
        {"job": c.job, "kind": c.kind.value, "reason": c.reason.value, "detail": c.detail} for c in result.changes
    ]
    state.record(record)
    for c in result.changes:
        if c.kind is not ChangeKind.kept:
            log.info("job %s: %s (%s)", c.job, c.kind.value, c.detail)
    return WatchDecision("replan", failed, moved, report, record, returned)


def _with_nodes(workload: Workload, site: Site, nodes: list[Node]) -> Workload:
    """The workload with these nodes as device groups again, under the site's domain budgets."""
    document = workload.model_dump(mode="json", exclude_unset=True)
    document["devices"] = [*document["devices"], *(device_group(site, n) for n in nodes)]
    budgets = {d.id: d.budget_w for d in site.domains if d.budget_w is not None}
    document["power"] = {**document.get("power", {}), "domains": {**budgets, **workload.power.domains}}
    return Workload.load(document)


def _record(kind: str, failed, moved, report: ApplyReport | None, why: list[str]) -> dict[str, Any]:
    return {
        "at": datetime.now().astimezone().isoformat(timespec="seconds"),
        "kind": kind,
        "failed_nodes": list(failed),
        "moved": list(moved),
        "why": why,
        "actions": [{"job": a.job, "outcome": a.outcome.value, "detail": a.detail} for a in report.actions]
        if report is not None
        else [],
    }
