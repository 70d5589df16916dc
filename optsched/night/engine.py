"""The event loop the night planner and the baselines share.

At time 0 and at every event (a job finishes or is released, a power window starts or ends, devices fail or
come back) a policy decides which jobs hold which devices at which caps from then on; the engine checks the
decision, gives each job concrete device indices, advances time to the next event at the speeds the caps
give (remaining work / speedup), cuts segments and records the power drawn and the budget in force.

Restarts: a job that (re)starts from a checkpoint (after a preemption, a move to other devices or a device
failure) first holds its new devices `restart_hours` without progress. A device failure takes the group's
lowest-indexed devices that are up; a job holding one loses the work since its last checkpoint (checkpoints
every `checkpoint_hours` of progress since its last (re)start) and is planned again at once (`on_failure=
"replan"`) or waits for the repair and resumes on the same devices (`"wait"`, the static reference).
Policies do not see failures before they happen.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal, Protocol

from optsched.night.fleet import Fleet, Use, Uses
from optsched.night.reasons import JobRecord, miss_reason, never_ran_reason, stopped_reason
from optsched.night.summary import summarize
from optsched.schema.night import (
    JobTimeline,
    NightEvent,
    NightPlan,
    NightQueue,
    Segment,
    SegmentAllocation,
)
from optsched.schema.tolerances import DEADLINE_RTOL, TIME_TOL_HOURS

OnFailure = Literal["replan", "wait"]


@dataclass(frozen=True)
class Running:
    job: int
    uses: Uses
    remaining: float  # reference work-hours left
    restart_left: float  # hours of restart to serve before progress resumes
    since: float = 0.0  # when it (re)started on these devices


@dataclass(frozen=True)
class View:
    """What a policy sees at an event."""

    t: float
    fleet: Fleet
    running: tuple[Running, ...]
    ready: tuple[int, ...]  # waiting jobs, released, every predecessor finished (queue order)
    remaining: dict[int, float]  # work left (reference hours) of each ready job
    needs_restart: frozenset[int]  # ready jobs preempted or failed earlier: they restart before progressing
    free: tuple[int, ...]  # devices per group no running job holds and that are up
    next_event: float  # the earliest known event after t with the current allocations (inf when none)
    preempt: bool
    ready_since: dict[int, float] = field(default_factory=dict)  # when each ready job first became ready
    up: tuple[int, ...] = ()  # devices per group that are up (not failed)
    stalled: tuple[Running, ...] = ()  # jobs waiting for a repair (on_failure="wait"); `since` = when they resume
    work_left: dict[int, float] = field(default_factory=dict)  # every job's work left (reference hours; 0 when done)

    def finish_at(self, r: Running) -> float:
        """When running job r ends if its allocation stays as it is."""
        s = self.fleet.speedup(r.job, r.uses)
        return self.t + r.restart_left + (r.remaining / s if s > 0 else math.inf)

    def devices_up(self) -> tuple[int, ...]:
        """Devices per group that are up (every device where the engine gave no `up`)."""
        return self.up or tuple(g.count for g in self.fleet.queue.devices)

    def restart_of(self, j: int) -> float:
        """Hours ready job j first spends restarting if it starts now (0 unless it was preempted or failed)."""
        return self.fleet.restart_hours(j) if j in self.needs_restart else 0.0


@dataclass(frozen=True)
class Decision:
    uses: dict[int, Uses]  # every job that holds devices from now on (running ones kept, new ones started)
    solve: str | None = None  # how it was decided, for the event log
    time_limited: bool = False  # a solve stopped at its time limit


class Policy(Protocol):
    name: str

    def decide(self, view: View) -> Decision: ...


@dataclass(frozen=True)
class Progress:
    t_hours: float
    jobs_finished: int
    jobs_total: int
    events: int


ProgressCallback = Callable[[Progress], None]


@dataclass(frozen=True)
class _Piece:
    start: float
    end: float
    restart: bool
    held: tuple[tuple[int, int, tuple[int, ...]], ...]  # (group, level, device indices)
    speedup: float
    work: float
    lost: float = 0.0  # work rolled back at the piece's end (a device failure)


@dataclass
class _Job:
    remaining: float
    state: str = "waiting"  # waiting | running | stalled (waits for a repair) | done
    uses: Uses = ()
    held: tuple[tuple[int, int, tuple[int, ...]], ...] = ()
    restart_left: float = 0.0
    needs_restart: bool = False
    start: float | None = None
    finish: float | None = None
    since: float = 0.0  # when it (re)started on its current devices
    run_from: float = 0.0  # when its current stretch of progress began (the checkpoint clock's origin)
    ready_at: float | None = None
    pieces: list[_Piece] = field(default_factory=list)


class InternalError(RuntimeError):
    """A policy broke the engine's rules: a bug, never a property of the input."""


def simulate(
    queue: NightQueue,
    policy: Policy,
    *,
    start: datetime,
    hours: float,
    preempt: bool = False,
    restart_hours: float = 0.0,
    on_failure: OnFailure = "replan",
    progress: ProgressCallback | None = None,
    warnings: tuple[str, ...] = (),
) -> NightPlan:
    """Run the event loop for the whole queue (past the night's end if needed) and assemble the NightPlan."""
    run = _Run(Fleet(queue, restart_hours), policy, preempt, on_failure)
    run.loop(progress)
    return run.night_plan(start, hours, warnings)


class _Run:
    def __init__(self, fleet: Fleet, policy: Policy, preempt: bool, on_failure: OnFailure):
        self.fleet = fleet
        self.policy = policy
        self.preempt = preempt
        self.on_failure = on_failure
        self.jobs = [_Job(remaining=j.work_hours) for j in fleet.jobs]
        self.holders: list[list[int | None]] = [[None] * g.count for g in fleet.queue.devices]
        self.down: dict[tuple[int, int], float] = {}  # (group, index) -> when it is back
        self.reserved: dict[tuple[int, int], int] = {}  # (group, index) -> stalled job it waits for (on_failure=wait)
        self.group_of = {g.id: k for k, g in enumerate(fleet.queue.devices)}
        self.failures = sorted(fleet.queue.failures, key=lambda f: f.at_hours)
        self.events: list[NightEvent] = []
        self.time_limited = 0
        self.t = 0.0

    # The loop -------------------------------------------------------------------------------

    def loop(self, progress: ProgressCallback | None) -> None:
        n_jobs, n_bounds = len(self.jobs), len(self.fleet.boundaries)
        finished: list[int] = []
        failed: list[int] = []
        # Each event is the start, a release time, a finish, a window boundary, a failure or a repair: fewer than this.
        for _ in range(3 * n_jobs + n_bounds + 2 * len(self.failures) + 2):
            ready = self._ready()
            for i in ready:
                if self.jobs[i].ready_at is None:
                    self.jobs[i].ready_at = self.t
            decision = self.policy.decide(self._view(ready)) if ready or self._running() else Decision({})
            self.time_limited += decision.time_limited
            started, recapped, preempted, moved = self._apply(decision, ready)
            self._record(finished, failed, started, recapped, preempted, moved, decision.solve)
            if progress is not None:
                done = sum(j.state == "done" for j in self.jobs)
                progress(Progress(self.t, done, n_jobs, len(self.events)))
            nxt = self._next_event()
            if math.isinf(nxt):
                return
            finished, failed = self._advance(nxt)
        raise InternalError("the event loop did not end within its event bound")

    def _running(self) -> list[int]:
        return [i for i, j in enumerate(self.jobs) if j.state == "running"]

    def _ready(self) -> list[int]:
        preds = self.fleet.predecessors
        return [
            i
            for i, j in enumerate(self.jobs)
            if j.state == "waiting"
            and self.fleet.jobs[i].release_hours <= self.t + TIME_TOL_HOURS
            and all(self.jobs[p].state == "done" for p in preds[i])
        ]

    def _is_free(self, g: int, k: int) -> bool:
        return self.holders[g][k] is None and (g, k) not in self.down and (g, k) not in self.reserved

    def _free(self) -> tuple[int, ...]:
        return tuple(sum(self._is_free(g, k) for k in range(len(h))) for g, h in enumerate(self.holders))

    def _view(self, ready: list[int]) -> View:
        running = tuple(
            Running(i, self.jobs[i].uses, self.jobs[i].remaining, self.jobs[i].restart_left, self.jobs[i].since)
            for i in self._running()
        )
        return View(
            t=self.t,
            fleet=self.fleet,
            running=running,
            ready=tuple(ready),
            remaining={i: self.jobs[i].remaining for i in ready},
            needs_restart=frozenset(i for i in ready if self.jobs[i].needs_restart),
            free=self._free(),
            next_event=self._next_event(foreseen=True),
            preempt=self.preempt,
            ready_since={i: at for i in ready if (at := self.jobs[i].ready_at) is not None},
            stalled=tuple(
                Running(
                    i,
                    j.uses,
                    j.remaining,
                    self.fleet.restart_hours(i),
                    max(self.down.get((g, k), self.t) for g, _, ix in j.held for k in ix),
                )
                for i, j in enumerate(self.jobs)
                if j.state == "stalled"
            ),
            up=tuple(
                g.count - sum(1 for (h, _) in self.down if h == k) for k, g in enumerate(self.fleet.queue.devices)
            ),
            work_left={i: j.remaining for i, j in enumerate(self.jobs)},
        )

    def _finish_at(self, i: int) -> float:
        job = self.jobs[i]
        s = self.fleet.speedup(i, job.uses)
        return self.t + job.restart_left + (job.remaining / s if s > 0 else math.inf)

    def _next_event(self, foreseen: bool = False) -> float:
        """The next event; with `foreseen`, only those a policy can know of (no failure that has not happened)."""
        t = self.t + TIME_TOL_HOURS
        candidates = [self._finish_at(i) for i in self._running()]
        waiting = [i for i, j in enumerate(self.jobs) if j.state in ("waiting", "stalled")]
        candidates += [self.fleet.jobs[i].release_hours for i in waiting if self.fleet.jobs[i].release_hours > t]
        if waiting or candidates:
            candidates += [b for b in self.fleet.boundaries if b > t]
            candidates += [f.back_hours for f in self.failures if f.back_hours > t and (not foreseen or f.at_hours < t)]
            if not foreseen:
                candidates += [f.at_hours for f in self.failures if f.at_hours > t]
        return min(candidates, default=math.inf)

    # Applying a decision --------------------------------------------------------------------

    def _apply(self, decision: Decision, ready: list[int]) -> tuple[list[int], list[int], list[int], list[int]]:
        """Check the decision, move devices and return (started, recapped, preempted, moved) job indices."""
        uses = {i: tuple(sorted(u for u in us if u.count > 0)) for i, us in decision.uses.items()}
        uses = {i: us for i, us in uses.items() if us}
        running = self._running()
        for i in uses:
            if i not in running and i not in ready:
                raise InternalError(
                    f"policy {self.policy.name!r} started job {self.fleet.jobs[i].id!r}, which is not ready"
                )
        changed = [i for i in running if i not in uses or _group_counts(uses[i]) != _group_counts(self.jobs[i].uses)]
        preempted = [i for i in changed if i not in uses]
        moved = [i for i in changed if i in uses]
        forbidden = [i for i in preempted if not self.preempt]
        forbidden += [i for i in moved if not (self.preempt or self.fleet.elastic(i))]
        if forbidden:
            names = [self.fleet.jobs[i].id for i in forbidden]
            raise InternalError(
                f"policy {self.policy.name!r} took devices from running jobs {names} (neither preemption nor elastic)"
            )
        for i in changed:
            self._release(i)
        for i in preempted:
            job = self.jobs[i]
            job.state, job.uses, job.held, job.restart_left, job.needs_restart = "waiting", (), (), 0.0, True
        recapped = [i for i in running if i in uses and i not in changed and uses[i] != self.jobs[i].uses]
        for i in recapped:
            self.jobs[i].uses = uses[i]
            self.jobs[i].held = _relevel(self.jobs[i].held, uses[i])
        started = [i for i in sorted(uses) if i not in running or i in moved]
        for i in started:
            self._take(i, uses[i])
        return [i for i in started if i not in moved], recapped, preempted, moved

    def _release(self, i: int) -> None:
        for g, _, indices in self.jobs[i].held:
            for k in indices:
                self.holders[g][k] = None

    def _take(self, i: int, uses: Uses) -> None:
        held = []
        for u in uses:
            free = [k for k in range(len(self.holders[u.group])) if self._is_free(u.group, k)][: u.count]
            if len(free) < u.count:
                group = self.fleet.queue.devices[u.group].id
                raise InternalError(
                    f"policy {self.policy.name!r} gave job {self.fleet.jobs[i].id!r} busy devices of {group!r}"
                )
            for k in free:
                self.holders[u.group][k] = i
            held.append((u.group, u.level, tuple(free)))
        job = self.jobs[i]
        was_running = job.state == "running"
        self._run_on(i, uses, tuple(held), restart=job.needs_restart or was_running)

    def _run_on(self, i: int, uses: Uses, held, *, restart: bool) -> None:
        job = self.jobs[i]
        job.state, job.uses, job.held = "running", uses, held
        job.restart_left = self.fleet.restart_hours(i) if restart else 0.0
        job.needs_restart = False
        job.since, job.run_from = self.t, self.t + job.restart_left
        if job.start is None:
            job.start = self.t

    # Time -----------------------------------------------------------------------------------

    def _advance(self, t2: float) -> tuple[list[int], list[int]]:
        """Run every job from self.t to t2, then repair and fail devices at t2; return (finished, failed) jobs."""
        finished = []
        for i in self._running():
            job = self.jobs[i]
            ends = self._finish_at(i) <= t2 + TIME_TOL_HOURS
            s = self.fleet.speedup(i, job.uses)
            t = self.t
            if job.restart_left > 0:
                upto = min(t2, t + job.restart_left)
                job.pieces.append(_Piece(t, upto, True, job.held, 0.0, 0.0))
                left = 0.0 if upto < t2 else job.restart_left - (t2 - t)
                job.restart_left = left if left > TIME_TOL_HOURS else 0.0
                t = upto
            if t < t2:
                work = job.remaining if ends else min(job.remaining, s * (t2 - t))
                job.pieces.append(_Piece(t, t2, False, job.held, s, work))
                job.remaining -= work
            if ends:
                job.state, job.remaining, job.finish = "done", 0.0, t2
                self._release(i)
                job.uses, job.held = (), ()
                finished.append(i)
        self.t = t2
        self._repair()
        return finished, self._fail()

    def _repair(self) -> None:
        """Devices whose repair ends now are up; a stalled job whose devices are all back resumes on them, at the
        highest caps (its own or lower) whose draw fits the budgets in force until it would end, else it waits on."""
        for key in [key for key, back in self.down.items() if back <= self.t + TIME_TOL_HOURS]:
            del self.down[key]
        for i, job in enumerate(self.jobs):
            if job.state == "stalled" and not any((g, k) in self.down for g, _, ix in job.held for k in ix):
                uses = self._fitting(i, job.uses)
                if uses is None:
                    continue
                for g, _, indices in job.held:
                    for k in indices:
                        del self.reserved[g, k]
                        self.holders[g][k] = i
                self._run_on(i, uses, _relevel(job.held, uses), restart=True)

    def _fitting(self, i: int, uses: Uses) -> Uses | None:
        """Job i's devices at these levels or lower (one cap step at a time) so that, with the running jobs still
        running then, the draw fits the domain budgets and the global budget now and at every window start before
        the job would end at those caps (a resumed job is not re-capped later: the policies only re-cap what they
        started); None if not even the lowest caps fit."""
        current = list(uses)
        while True:
            if self._fits_until_end(i, tuple(current)):
                return tuple(sorted(current))
            lower = [
                (k, lv)
                for k, u in enumerate(current)
                for lv in [self.fleet.next_lower_cap_level(u.group, u.level)]
                if lv is not None
            ]
            if not lower:
                return None
            k, lv = lower[0]
            current[k] = Use(current[k].group, lv, current[k].count)

    def _fits_until_end(self, i: int, uses: Uses) -> bool:
        """sum of draws <= budget_w at t and at each window start in (t, end of job i on `uses`), per domain too."""
        fleet = self.fleet
        s = fleet.speedup(i, uses)
        end = self.t + fleet.restart_hours(i) + (self.jobs[i].remaining / s if s > 0 else math.inf)
        running = {r: (self.jobs[r].uses, self._finish_at(r)) for r in self._running()}
        instants = [self.t] + [b for b in fleet.boundaries if self.t + TIME_TOL_HOURS < b < end - TIME_TOL_HOURS]
        for at in instants:
            still = [u for u, ends in running.values() if at == self.t or ends > at + TIME_TOL_HOURS]
            total, by_domain = fleet.power([*still, uses])
            budget = fleet.budget_at(at)
            if budget is not None and total > budget + 1e-9:
                return False
            if any(by_domain.get(d, 0.0) > b + 1e-9 for d, b in fleet.queue.power.domains.items()):
                return False
        return True

    def _fail(self) -> list[int]:
        """Failures starting now take each group's lowest-indexed devices that are up; return the jobs they stop."""
        hit: set[int] = set()
        for f in self.failures:
            if abs(f.at_hours - self.t) > TIME_TOL_HOURS:
                continue
            g = self.group_of[f.device]
            up = [k for k in range(len(self.holders[g])) if (g, k) not in self.down][: f.count]
            for k in up:
                self.down[g, k] = f.back_hours
                holder = self.holders[g][k]
                if holder is not None:
                    hit.add(holder)
        for i in sorted(hit):
            self._stop(i)
        return sorted(hit)

    def _stop(self, i: int) -> None:
        """A device of running job i failed: the work since its last checkpoint is lost; it waits or is re-planned."""
        job = self.jobs[i]
        lost = 0.0
        if job.restart_left <= 0.0 and self.t > job.run_from:
            every = self.fleet.checkpoint_hours(i)
            saved = job.run_from + every * math.floor((self.t - job.run_from) / every + 1e-9)
            lost = sum(
                p.speedup * max(0.0, min(p.end, self.t) - max(p.start, saved)) for p in job.pieces if not p.restart
            )
        if job.pieces:
            last = job.pieces[-1]
            job.pieces[-1] = _Piece(last.start, last.end, last.restart, last.held, last.speedup, last.work, lost)
        job.remaining += lost
        self._release(i)
        job.restart_left, job.needs_restart = 0.0, True
        if self.on_failure == "wait":
            job.state = "stalled"
            for g, _, indices in job.held:
                for k in indices:
                    self.reserved[g, k] = i
        else:
            job.state, job.uses, job.held = "waiting", (), ()

    # Records --------------------------------------------------------------------------------

    def _record(self, finished, failed, started, recapped, preempted, moved, solve: str | None) -> None:
        ids = [j.id for j in self.fleet.jobs]
        groups = self.fleet.queue.devices
        down: dict[str, list[int]] = {}
        for g, k in sorted(self.down):
            down.setdefault(groups[g].id, []).append(k)
        power, by_domain = self.fleet.power([self.jobs[i].uses for i in self._running()])
        released = [i for i, j in enumerate(self.fleet.jobs) if abs(j.release_hours - self.t) <= TIME_TOL_HOURS]
        self.events.append(
            NightEvent(
                at_hours=self.t,
                at="",  # filled in night_plan, where the start time is known
                released=tuple(ids[i] for i in released),
                finished=tuple(ids[i] for i in finished),
                started=tuple(ids[i] for i in started),
                recapped=tuple(ids[i] for i in recapped),
                preempted=tuple(ids[i] for i in preempted),
                moved=tuple(ids[i] for i in moved),
                failed=tuple(ids[i] for i in failed),
                down={g: tuple(ix) for g, ix in down.items()},
                window=self.fleet.window_change(self.t),
                power_w=power,
                power_by_domain=by_domain,
                budget_w=self.fleet.budget_at(self.t),
                budget_by_domain=dict(sorted(self.fleet.queue.power.domains.items())),
                solve=solve,
            )
        )

    def night_plan(self, start: datetime, hours: float, warnings: tuple[str, ...]) -> NightPlan:
        def iso(h: float) -> str:
            return (start + timedelta(hours=h)).isoformat(timespec="seconds")

        records = [self._job_record(i) for i in range(len(self.jobs))]
        timelines = []
        for i, job in enumerate(self.fleet.jobs):
            rec = records[i]
            met = None
            if job.deadline_hours is not None:
                met = rec.finish is not None and rec.finish <= job.deadline_hours * (1 + DEADLINE_RTOL)
            reason = None
            if rec.finish is None and rec.pieces:
                reason = stopped_reason(self.fleet, i, records, self.jobs[i].remaining)
            elif rec.finish is None:
                reason = never_ran_reason(self.fleet, i, records)
            elif met is False:
                reason = miss_reason(self.fleet, i, records)
            timelines.append(
                JobTimeline(
                    job=job.id,
                    priority=job.priority.value,
                    weight=job.weight,
                    work_hours=job.work_hours,
                    release_hours=job.release_hours,
                    after=job.after,
                    deadline_hours=job.deadline_hours,
                    deadline=None if job.deadline_hours is None else iso(job.deadline_hours),
                    start_hours=rec.start,
                    finish_hours=rec.finish,
                    start=None if rec.start is None else iso(rec.start),
                    finish=None if rec.finish is None else iso(rec.finish),
                    wait_hours=None if rec.start is None else rec.start - job.release_hours,
                    deadline_met=met,
                    reason=reason,
                    restarts=_restart_runs(_merged(self.jobs[i].pieces)),
                    lost_work_hours=sum(p.lost for p in self.jobs[i].pieces),
                    segments=tuple(self._segments(i, iso)),
                )
            )
        events = tuple(e.model_copy(update={"at": iso(e.at_hours)}) for e in self.events)
        summary = summarize(self.fleet.queue, self.policy.name, tuple(timelines), events, hours, self.time_limited)
        return NightPlan(
            queue=self.fleet.queue.name,
            policy=self.policy.name,
            start=start,
            hours=hours,
            preempt=self.preempt,
            restart_hours=self.fleet.restart_default,
            on_failure=self.on_failure,
            power=self.fleet.queue.power,
            failures=self.fleet.queue.failures,
            status=summary.status,
            jobs=tuple(timelines),
            events=events,
            summary=summary,
            warnings=warnings,
        )

    def _job_record(self, i: int) -> JobRecord:
        job = self.jobs[i]
        return JobRecord(
            start=job.start,
            finish=job.finish,
            pieces=tuple((p.start, p.end, p.restart, p.held) for p in _merged(job.pieces)),
        )

    def _segments(self, i: int, iso) -> list[Segment]:
        groups = self.fleet.queue.devices
        out = []
        for p in _merged(self.jobs[i].pieces):
            out.append(
                Segment(
                    from_hours=p.start,
                    to_hours=p.end,
                    from_=iso(p.start),
                    to=iso(p.end),
                    restart=p.restart,
                    speedup=p.speedup,
                    work_hours=p.work,
                    rolled_back_hours=p.lost,
                    allocations=tuple(
                        SegmentAllocation(
                            device=groups[g].id,
                            devices=indices,
                            cap_w=groups[g].power_levels[lv].cap_w,
                            speed=self.fleet.speed(i, g, lv),
                        )
                        for g, lv, indices in p.held
                    ),
                )
            )
        return out


def _group_counts(uses: Uses) -> dict[int, int]:
    counts: dict[int, int] = {}
    for u in uses:
        counts[u.group] = counts.get(u.group, 0) + u.count
    return counts


def _relevel(held, uses: Uses):
    """The same device indices per group, split over the new levels in level order."""
    by_group: dict[int, list[int]] = {}
    for g, _, indices in held:
        by_group.setdefault(g, []).extend(indices)
    out = []
    for g in sorted(by_group):
        indices = sorted(by_group[g])
        k = 0
        for u in (u for u in uses if u.group == g):
            out.append((g, u.level, tuple(indices[k : k + u.count])))
            k += u.count
    return tuple(out)


def _merged(pieces: list[_Piece]) -> list[_Piece]:
    """Adjacent pieces with the same devices, caps and restart flag are one segment."""
    out: list[_Piece] = []
    for p in pieces:
        if p.end - p.start <= 0:
            continue
        last = out[-1] if out else None
        if (
            last is not None
            and last.restart == p.restart
            and last.held == p.held
            and last.lost == 0.0
            and abs(last.end - p.start) <= TIME_TOL_HOURS
        ):
            out[-1] = _Piece(last.start, p.end, p.restart, p.held, p.speedup, last.work + p.work, p.lost)
        else:
            out.append(p)
    return out


def _restart_runs(pieces: list[_Piece]) -> int:
    """Restart runs: maximal stretches of back-to-back restart pieces on the same devices (a move to other devices
    mid-restart is a new restart)."""
    runs = 0
    for k, p in enumerate(pieces):
        last = pieces[k - 1] if k else None
        joined = (
            last is not None
            and last.restart
            and abs(last.end - p.start) <= TIME_TOL_HOURS
            and _indices(last.held) == _indices(p.held)
        )
        if p.restart and not joined:
            runs += 1
    return runs


def _indices(held) -> set[tuple[int, int]]:
    """The (group, index) devices of a piece, whatever their caps."""
    return {(g, k) for g, _, indices in held for k in indices}
