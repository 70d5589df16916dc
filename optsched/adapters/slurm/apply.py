"""optsched -> Slurm: a plan's placements onto the held jobs, as `scontrol` commands that are all planned and
checked before the first one runs, and that change nothing when the jobs already are as planned.

Per placed job: `scontrol update jobid=J NumNodes=k ReqNodeList=NODES Features=TYPE Gres=gpu:N Comment=...`
(the comment carries the planned cap for the Prolog; a night plan adds StartTime=its start), then
`scontrol release J`, in the planned order. Slurm 22.05 cannot change a pending job's GPU *type* in its gres,
so the type goes into Features and the gres stays untyped. A pending job that was released before and must
change is held while it changes; a job the plan leaves out is held (or stays held) and its reason reported.
"""

from __future__ import annotations

import logging
import math
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from optsched.adapters.slurm.comment import with_caps
from optsched.adapters.slurm.runner import SlurmError, SlurmInputError, SlurmRunner
from optsched.adapters.slurm.snapshot import SlurmJob, Snapshot, read_snapshot
from optsched.schema.night import NightPlan, NightQueue
from optsched.schema.plan import Plan
from optsched.schema.workload import Workload
from optsched.verify.placement import verify
from optsched.verify.timeline import verify_timeline

log = logging.getLogger(__name__)

HOUR_S = 3600.0
# States of a job that started; any other state out of the queue (cancelled, failed, timed out...) ends it unrun.
STARTED_STATES = frozenset({"CONFIGURING", "RUNNING", "COMPLETING", "COMPLETED", "SUSPENDED"})
# A begin time this close to the planned one counts as set (Slurm keeps whole seconds).
BEGIN_TOL_S = 1.0


class Outcome(StrEnum):
    placed = "placed"  # updated (and released) as planned
    unchanged = "unchanged"  # already as planned: nothing to do
    started = "started"  # it left the queue before the plan reached it (running or finished)
    vanished = "vanished"  # Slurm no longer knows it, or it ended without running (cancelled, failed)
    left_held = "left_held"  # the plan does not place it: it waits, held


@dataclass(frozen=True)
class Target:
    """Where and when the plan runs one job: the same GPU count on each of `nodes`, each node's cap in W."""

    job: str
    nodes: tuple[str, ...]
    gpus: int
    caps: Mapping[str, float]
    begin: datetime | None = None


@dataclass(frozen=True)
class JobAction:
    job: str
    outcome: Outcome
    detail: str
    commands: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True)
class ApplyReport:
    actions: tuple[JobAction, ...]
    dry_run: bool
    executed: tuple[tuple[str, ...], ...] = field(default=())

    @property
    def commands(self) -> tuple[tuple[str, ...], ...]:
        return tuple(c for a in self.actions for c in a.commands)

    def by_outcome(self, outcome: Outcome) -> tuple[str, ...]:
        return tuple(a.job for a in self.actions if a.outcome is outcome)

    def lines(self) -> list[str]:
        """The commands as shell lines (what --dry-run prints)."""
        return [shlex.join(c) for c in self.commands]


def apply_plan(workload: Workload, plan: Plan, runner: SlurmRunner, *, dry_run: bool = False) -> ApplyReport:
    """Carry `plan` (made for `workload`, as imported from this cluster) out on the pending jobs.

    SlurmInputError lists every problem (a plan that does not verify, a placement Slurm cannot express, a node
    that went away) before any command runs."""
    problems = [f"plan: {p}" for p in verify(workload, plan)]
    if problems:
        raise SlurmInputError(problems)
    targets, problems = plan_targets(plan)
    left_out = {p.job: "the plan does not admit it" for p in plan.placements if not p.admitted}
    return _carry_out(targets, left_out, problems, [j.id for j in workload.jobs], runner, dry_run)


def apply_night(
    queue: NightQueue, night: NightPlan, runner: SlurmRunner, *, dry_run: bool = False, seconds_per_hour: float = HOUR_S
) -> ApplyReport:
    """Carry a night plan out: each job on the devices of its first segment, begin time = the night's start +
    its start in plan hours x `seconds_per_hour` (3600; tests shrink the night), released in start order."""
    problems = [f"night plan: {p}" for p in verify_timeline(queue, night)]
    if problems:
        raise SlurmInputError(problems)
    targets, problems = night_targets(night, seconds_per_hour)
    left_out = {t.job: t.reason or "the night plan does not run it" for t in night.jobs if not t.segments}
    return _carry_out(targets, left_out, problems, [j.id for j in queue.jobs], runner, dry_run)


def plan_targets(plan: Plan) -> tuple[list[Target], list[str]]:
    return _targets(
        [(p.job, [(a.device, a.count, a.cap_w) for a in p.allocations], None) for p in plan.placements if p.admitted]
    )


def night_targets(night: NightPlan, seconds_per_hour: float) -> tuple[list[Target], list[str]]:
    items, moving = [], []
    for t in sorted(night.jobs, key=lambda t: (t.start_hours is None, t.start_hours or 0.0)):
        if not t.segments:
            continue
        first = t.segments[0]
        held = {(a.device, a.devices) for a in first.allocations}
        if any({(a.device, a.devices) for a in s.allocations} != held for s in t.segments[1:]):
            moving.append(f"job {t.job}: the night plan moves or resizes it while it runs, which Slurm cannot do")
            continue
        # Slurm keeps whole seconds: rounded up, a job never begins before its planned start.
        at = math.ceil(night.start.timestamp() + first.from_hours * seconds_per_hour)
        begin = datetime.fromtimestamp(at, tz=night.start.tzinfo)
        items.append((t.job, [(a.device, a.count, a.cap_w) for a in first.allocations], begin))
    targets, problems = _targets(items)
    return targets, moving + problems


def _targets(
    items: Iterable[tuple[str, list[tuple[str, int, float]], datetime | None]],
) -> tuple[list[Target], list[str]]:
    """Each job's target, and why Slurm cannot run the others as planned."""
    targets, problems = [], []
    for job, allocations, begin in items:
        target = _target(job, allocations, begin)
        if isinstance(target, str):
            problems.append(target)
        else:
            targets.append(target)
    return targets, problems


def _target(job: str, allocations: Iterable[tuple[str, int, float]], begin: datetime | None) -> Target | str:
    """The job's target, or why Slurm cannot run it as planned."""
    counts: dict[str, int] = {}
    caps: dict[str, float] = {}
    for node, count, cap in allocations:
        counts[node] = counts.get(node, 0) + count
        # Several caps on one node: the Prolog sets one per job and node, so the lowest (the budget holds).
        caps[node] = min(cap, caps.get(node, cap))
    if len(set(counts.values())) != 1:
        shown = ", ".join(f"{n} {c}" for n, c in counts.items())
        return f"job {job}: the plan gives it {shown} GPUs; Slurm gives each node of a job the same count"
    return Target(job, tuple(sorted(counts)), next(iter(counts.values())), caps, begin)


def _carry_out(
    targets: Sequence[Target],
    left_out: Mapping[str, str],
    problems: list[str],
    jobs: Sequence[str],
    runner: SlurmRunner,
    dry_run: bool,
) -> ApplyReport:
    snapshot = read_snapshot(runner)
    for t in targets:
        for name in t.nodes:
            node = snapshot.node(name)
            if node is None:
                problems.append(f"job {t.job}: node {name} is not in the cluster")
            elif not node.available:
                problems.append(f"job {t.job}: {node.problem}")
    if problems:
        raise SlurmInputError(problems)
    actions = [_place(t, snapshot) for t in targets]
    placed = {t.job for t in targets}
    actions += [
        _leave_out(job, left_out.get(job, "the plan does not name it"), snapshot) for job in jobs if job not in placed
    ]
    report = ApplyReport(tuple(actions), dry_run)
    if dry_run:
        return report
    executed: list[tuple[str, ...]] = []
    for command in report.commands:
        try:
            runner.run(command)
        except SlurmError as err:
            # A job that started between the read and its command, or slurmctld gone: what ran stays done, and
            # applying again does only what is left.
            raise SlurmError(
                f"{err}; {len(executed)} of {len(report.commands)} commands had run (apply again to finish)"
            ) from err
        executed.append(command)
    for action in actions:
        log.info("job %s: %s (%s)", action.job, action.outcome.value, action.detail)
    return ApplyReport(tuple(actions), dry_run, tuple(executed))


def _place(t: Target, snapshot: Snapshot) -> JobAction:
    job = snapshot.job(t.job)
    where = f"{t.gpus} GPU(s) on {','.join(t.nodes)}"
    if job is None or not job.pending:
        return _out_of_queue(t.job, job, f"planned {where}")
    # The GPU type as a constraint where the GRES is typed (with the node list given, it restates it); an untyped
    # node's job keeps its own features.
    nodes = [snapshot.node(n) for n in t.nodes]
    types = {n.gpu_type for n in nodes if n is not None}
    features = job.features if None in types else "|".join(sorted(str(x) for x in types))
    comment = with_caps(job.comment, {n: t.caps[n] for n in t.nodes})
    wanted = {
        "NumNodes": str(len(t.nodes)),
        "ReqNodeList": ",".join(t.nodes),
        "Features": features,
        "Gres": f"gpu:{t.gpus}",
        "Comment": comment,
    }
    if t.begin is not None:
        wanted["StartTime"] = t.begin.strftime("%Y-%m-%dT%H:%M:%S")
    same = (
        _hostnames(job.required_nodes) == set(t.nodes)
        and job.features == features
        and job.gpus == t.gpus
        and job.gpu_type is None
        and job.comment == comment
        and (t.begin is None or abs(job.eligible_time - t.begin.timestamp()) <= BEGIN_TOL_S)
    )
    if same and not job.held:
        return JobAction(t.job, Outcome.unchanged, f"already {where}")
    commands: list[tuple[str, ...]] = []
    if not job.held:
        commands.append(("scontrol", "hold", t.job))
    if not same:
        commands.append(("scontrol", "update", f"jobid={t.job}", *(f"{k}={v}" for k, v in wanted.items())))
    commands.append(("scontrol", "release", t.job))
    caps = ", ".join(f"{n} {round(t.caps[n])} W" for n in t.nodes)
    begins = f", from {wanted['StartTime']}" if t.begin is not None else ""
    return JobAction(t.job, Outcome.placed, f"{where} ({features}), cap {caps}{begins}", tuple(commands))


def _leave_out(job_id: str, reason: str, snapshot: Snapshot) -> JobAction:
    job = snapshot.job(job_id)
    if job is None or not job.pending:
        return _out_of_queue(job_id, job, reason)
    commands = () if job.held else (("scontrol", "hold", job_id),)
    return JobAction(job_id, Outcome.left_held, f"stays held: {reason}", commands)


def _out_of_queue(job_id: str, job: SlurmJob | None, note: str) -> JobAction:
    """A job that left the queue before the plan reached it: started (running or done), or vanished (unknown to
    Slurm, cancelled, failed...)."""
    if job is None:
        return JobAction(job_id, Outcome.vanished, f"Slurm no longer knows it; {note}")
    if job.state in STARTED_STATES:
        return JobAction(job_id, Outcome.started, f"{job.state} on {job.nodes or '-'}; {note}")
    return JobAction(job_id, Outcome.vanished, f"{job.state} before the plan reached it; {note}")


_RANGE = re.compile(r"([^,\[]*)\[([^\]]*)\]([^,]*)|([^,]+)")


def _hostnames(nodes: str) -> set[str]:
    """Slurm's compact node list ("n[1-2,4],gpu7") as names; simple one-bracket forms, as Slurm prints them."""
    names: set[str] = set()
    for prefix, ranges, suffix, plain in _RANGE.findall(nodes):
        if plain:
            names.add(plain)
            continue
        for part in ranges.split(","):
            low, _, high = part.partition("-")
            width = len(low)
            for i in range(int(low), int(high or low) + 1):
                names.add(f"{prefix}{i:0{width}d}{suffix}")
    return names
