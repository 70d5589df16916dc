"""Independent timeline verifier: recompute a night plan from its segments and list every violation.

It shares no code with the night planner or the baselines; it reads only the queue (NightQueue) and the
NightPlan schema, and uses the plan verifier's formula helpers. The rules, from the written semantics:

* every queue job appears once, echoing its fields; its segments are ordered, disjoint, on existing
  devices (index < count) at existing caps, eligible, with min_devices..max_devices devices;
* at every instant no device serves two jobs, and every budget in force holds: the global budget
  (a window's inside it, else power.budget_w) and each domain budget; used devices draw their cap,
  the others idle_w;
* no job runs before its release or before every job it comes `after` has finished;
* a segment's speedup is the heterogeneous Amdahl S of its devices, its work S x duration, and a finished
  job's work, less the work rolled back by failures, adds up to work_hours (restart segments do no work and
  last the job's restart_hours, unless a failure cuts them short or the job moves to other devices, which starts
  a new restart);
* device failures take a group's lowest-indexed devices that are up; no segment uses a device while it is
  down, a segment holding a device that fails ends then, and it rolls back exactly the work done since the
  job's last checkpoint (every checkpoint_hours of progress since its last restart, gap or change of devices);
* reported starts, finishes, deadlines met, event power and the summary figures match a recomputation.
"""

from __future__ import annotations

import heapq
import json
import math
from collections import defaultdict
from collections.abc import Callable, Mapping
from datetime import timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from optsched.schema.errors import FieldError, InvalidPlan
from optsched.schema.night import (
    JobTimeline,
    NightJob,
    NightPlan,
    NightQueue,
    NightStatus,
    Segment,
)
from optsched.schema.tolerances import TIME_TOL_HOURS
from optsched.schema.workload import (
    FAIR_OBJECTIVES,
    HARD_PRIORITIES,
    DeviceGroup,
    PowerLevel,
    Priority,
    field_errors,
)
from optsched.verify.placement import (
    amdahl_speedup,
    device_speed,
    find_level,
    ineligibility,
    job_weight,
    read_plan_document,
)

__all__ = ["down_spans", "load_night_plan", "verify_timeline"]



class _Ctx:
    def __init__(self, w: NightQueue, p: NightPlan, rel_tol: float):
        self.w, self.p, self.rel_tol = w, p, rel_tol
        self.groups: dict[str, DeviceGroup] = {g.id: g for g in w.devices}
        self.jobs: dict[str, NightJob] = {j.id: j for j in w.jobs}
        self.timelines: dict[str, JobTimeline] = {}
        for t in p.jobs:
            self.timelines.setdefault(t.job, t)
        self.profile = self._profile()
        self.down = self._down_spans()

    def _down_spans(self) -> dict[tuple[str, int], list[tuple[float, float]]]:
        """(group, index) -> [(failed at, back at)]: each failure takes the lowest-indexed devices up then."""
        return down_spans(self.w)

    def fails_at(self, seg: Segment, hours: float) -> bool:
        """Whether a device the segment holds fails at this instant."""
        return any(
            abs(a - hours) <= TIME_TOL_HOURS
            for alloc in seg.allocations
            for i in alloc.devices
            for a, _ in self.down.get((alloc.device, i), ())
        )

    def stopped(self, t: JobTimeline) -> bool:
        """A job a device failure stopped for good: it has segments, no finish, and a device its last segment holds
        fails at that segment's end."""
        return t.finish_hours is None and bool(t.segments) and self.fails_at(t.segments[-1], t.segments[-1].to_hours)

    def restart_cost(self, job: NightJob) -> float:
        if job.restart_hours is not None:
            return job.restart_hours
        if self.w.defaults.restart_hours is not None:
            return self.w.defaults.restart_hours
        return self.p.restart_hours

    def checkpoint_every(self, job: NightJob) -> float:
        return job.checkpoint_hours if job.checkpoint_hours is not None else self.w.defaults.checkpoint_hours

    def close(self, a: float, b: float) -> bool:
        return math.isclose(a, b, rel_tol=self.rel_tol, abs_tol=self.rel_tol)

    def iso(self, hours: float) -> str:
        return (self.p.start + timedelta(hours=hours)).isoformat(timespec="seconds")

    def budget_at(self, hours: float) -> float | None:
        for window in self.w.power.windows:
            if window.from_hours <= hours < window.to_hours:
                return window.budget_w
        return self.w.power.budget_w

    def level(self, job: NightJob, group: DeviceGroup, cap_w: float, speed: float) -> PowerLevel | None:
        factor = job.speed_on.get(group.model, 1.0)
        return find_level(group, cap_w, speed / factor, self.rel_tol)

    def segment_speedup(self, job: NightJob, seg: Segment) -> float:
        units = []
        for a in seg.allocations:
            group = self.groups.get(a.device)
            if group is None:
                continue
            level = self.level(job, group, a.cap_w, a.speed)
            if level is not None:
                units.append((len(a.devices), device_speed(job, group, level)))
        return amdahl_speedup(job.parallel_fraction, units)[0]

    def _profile(self) -> list[tuple[float, float, float, dict[str, float]]]:
        """(from, to, fleet W, W per domain) over elementary intervals from 0 to the last boundary."""
        cuts = {0.0}
        for t in self.p.jobs:
            for s in t.segments:
                cuts.update((s.from_hours, s.to_hours))
        for window in self.w.power.windows:
            cuts.update((window.from_hours, window.to_hours))
        points = sorted(cuts)
        out = []
        for a, b in pairwise(points):
            mid = (a + b) / 2
            busy: dict[str, int] = defaultdict(int)
            caps: dict[str, float] = defaultdict(float)
            for t in self.p.jobs:
                for s in t.segments:
                    if s.from_hours <= mid < s.to_hours:
                        for alloc in s.allocations:
                            busy[alloc.device] += len(alloc.devices)
                            caps[alloc.device] += len(alloc.devices) * alloc.cap_w
            by_domain: dict[str, float] = defaultdict(float)
            total = 0.0
            for g in self.w.devices:
                draw = caps[g.id] + max(g.count - busy[g.id], 0) * g.idle_w
                total += draw
                if g.domain is not None:
                    by_domain[g.domain] += draw
            out.append((a, b, total, dict(by_domain)))
        return out

    def draw_at(self, hours: float) -> tuple[float, dict[str, float]]:
        for a, b, total, by_domain in self.profile:
            if a - TIME_TOL_HOURS <= hours < b - TIME_TOL_HOURS:
                return total, by_domain
        idle = sum(g.idle_w * g.count for g in self.w.devices)
        domains: dict[str, float] = defaultdict(float)
        for g in self.w.devices:
            if g.domain is not None:
                domains[g.domain] += g.idle_w * g.count
        return idle, dict(domains)


def down_spans(queue: NightQueue) -> dict[tuple[str, int], list[tuple[float, float]]]:
    """(group, index) -> [(failed at, back at)] of the queue's failures in time order: each takes the
    lowest-indexed devices of its group that are up then (a device is back from the instant its repair ends, within
    TIME_TOL_HOURS). Per group, a heap of the devices back and a heap of the repairs pending: O((N + devices
    failed) log N), where scanning the group's devices for each failure was O(N x count)."""
    spans: dict[tuple[str, int], list[tuple[float, float]]] = defaultdict(list)
    counts = {g.id: g.count for g in queue.devices}
    fresh: dict[str, int] = defaultdict(int)  # devices [fresh, count) never failed yet
    back: dict[str, list[int]] = defaultdict(list)  # heap of the indices failed and repaired since
    pending: dict[str, list[tuple[float, int]]] = defaultdict(list)  # heap of (back at, index) of those down
    for f in sorted(queue.failures, key=lambda f: f.at_hours):
        device, now = f.device, f.at_hours + TIME_TOL_HOURS
        while pending[device] and pending[device][0][0] <= now:
            heapq.heappush(back[device], heapq.heappop(pending[device])[1])
        for _ in range(f.count):
            if back[device] and (fresh[device] >= counts.get(device, 0) or back[device][0] < fresh[device]):
                i = heapq.heappop(back[device])
            elif fresh[device] < counts.get(device, 0):
                i = fresh[device]
                fresh[device] += 1
            else:
                break  # every device of the group is down (or the group is unknown)
            spans[device, i].append((f.at_hours, f.at_hours + f.repair_hours))
            heapq.heappush(pending[device], (f.at_hours + f.repair_hours, i))
    return spans


def check_jobs_listed(ctx: _Ctx) -> list[str]:
    """Every queue job appears exactly once and echoes priority, weight, work, release, after and deadline."""
    out = []
    counts: dict[str, int] = defaultdict(int)
    for t in ctx.p.jobs:
        counts[t.job] += 1
        if t.job not in ctx.jobs:
            out.append(f"job {t.job!r}: in the timeline but not in the queue")
    for job in ctx.w.jobs:
        n = counts.get(job.id, 0)
        if n != 1:
            out.append(f"job {job.id!r}: appears {n} times in the timeline (expected once)")
            continue
        t = ctx.timelines[job.id]
        echoes = {
            "priority": (t.priority, job.priority.value),
            "weight": (t.weight, job.weight),
            "work_hours": (t.work_hours, job.work_hours),
            "release_hours": (t.release_hours, job.release_hours),
            "after": (tuple(t.after), tuple(job.after)),
            "deadline_hours": (t.deadline_hours, job.deadline_hours),
        }
        for name, (got, want) in echoes.items():
            if got != want:
                out.append(f"job {job.id!r}: echoes {name} {got!r}, the queue says {want!r}")
    return out


def check_segments(ctx: _Ctx) -> list[str]:
    """Segments are ordered and disjoint, timestamps match start + hours, start/finish are the first/last segment's."""
    out = []
    for t in ctx.p.jobs:
        label = f"job {t.job!r}"
        previous = None
        for k, s in enumerate(t.segments):
            if not s.from_hours < s.to_hours:
                out.append(f"{label}: segment {k} runs from {s.from_hours:g} h to {s.to_hours:g} h (empty or reversed)")
            if s.from_hours < -TIME_TOL_HOURS:
                out.append(f"{label}: segment {k} starts before the night ({s.from_hours:g} h)")
            if previous is not None and s.from_hours < previous.to_hours - TIME_TOL_HOURS:
                out.append(
                    f"{label}: segment {k} starts at {s.from_hours:g} h, before segment {k - 1} ends "
                    f"({previous.to_hours:g} h)"
                )
            if s.from_ != ctx.iso(s.from_hours) or s.to != ctx.iso(s.to_hours):
                out.append(f"{label}: segment {k} timestamps {s.from_}..{s.to} do not match its hours")
            if not s.allocations:
                out.append(f"{label}: segment {k} holds no device")
            previous = s
        first = t.segments[0].from_hours if t.segments else None
        last = t.segments[-1].to_hours if t.segments else None
        end = None if ctx.stopped(t) else last
        if not _same(ctx, t.start_hours, first) or not _same(ctx, t.finish_hours, end):
            out.append(
                f"{label}: reports start/finish {t.start_hours}/{t.finish_hours} h, segments span {first}/{last} h"
            )
        for name, hours, stamp in (("start", t.start_hours, t.start), ("finish", t.finish_hours, t.finish)):
            if (hours is None) != (stamp is None) or (hours is not None and stamp != ctx.iso(hours)):
                out.append(f"{label}: {name} timestamp {stamp} does not match {name}_hours {hours}")
        job = ctx.jobs.get(t.job)
        if job is not None and t.start_hours is not None:
            wait = t.start_hours - job.release_hours
            if t.wait_hours is None or not ctx.close(t.wait_hours, wait):
                out.append(f"{label}: reports wait_hours {t.wait_hours}, start - release = {wait:.9g} h")
    return out


def check_allocations(ctx: _Ctx) -> list[str]:
    """Devices exist (index < count, no repeats), caps are levels, speeds are level speed x speed_on, eligible, counts
    in range."""
    out = []
    for t in ctx.p.jobs:
        job = ctx.jobs.get(t.job)
        if job is None:
            continue
        label = f"job {t.job!r}"
        for k, s in enumerate(t.segments):
            n = 0
            for a in s.allocations:
                group = ctx.groups.get(a.device)
                if group is None:
                    out.append(f"{label}: segment {k} uses unknown device group {a.device!r}")
                    continue
                n += len(a.devices)
                if (
                    not a.devices
                    or len(set(a.devices)) != len(a.devices)
                    or any(i < 0 or i >= group.count for i in a.devices)
                ):
                    out.append(
                        f"{label}: segment {k} names devices {list(a.devices)} of {a.device!r}, which has {group.count}"
                    )
                level = ctx.level(job, group, a.cap_w, a.speed)
                if level is None:
                    out.append(f"{label}: segment {k}: {a.device!r} has no power level with cap {a.cap_w:g} W")
                else:
                    want = device_speed(job, group, level)
                    if not ctx.close(a.speed, want):
                        out.append(
                            f"{label}: segment {k}: {a.device!r} at {a.cap_w:g} W reports speed {a.speed:g}, "
                            f"expected {want:g}"
                        )
                why = ineligibility(job, group)
                if why is not None:
                    out.append(f"{label}: segment {k}: device {a.device!r} is not eligible: {why}")
            devices = [(a.device, i) for a in s.allocations for i in a.devices]
            if len(set(devices)) != len(devices):
                out.append(f"{label}: segment {k} lists a device twice")
            if n < job.min_devices or (job.max_devices is not None and n > job.max_devices):
                out.append(f"{label}: segment {k} holds {n} devices, outside min_devices..max_devices")
    return out


def check_devices_exclusive(ctx: _Ctx) -> list[str]:
    """At every instant each device serves at most one job."""
    out = []
    intervals: dict[tuple[str, int], list[tuple[float, float, str]]] = defaultdict(list)
    for t in ctx.p.jobs:
        for s in t.segments:
            for a in s.allocations:
                for i in a.devices:
                    intervals[a.device, i].append((s.from_hours, s.to_hours, t.job))
    for (device, i), spans in sorted(intervals.items()):
        spans.sort()
        for (_, a1, ja), (b0, b1, jb) in pairwise(spans):
            if b0 < a1 - TIME_TOL_HOURS:
                out.append(f"device {device!r}[{i}] serves {ja!r} and {jb!r} at once ({b0:g}-{min(a1, b1):g} h)")
    return out


def check_release_and_dependencies(ctx: _Ctx) -> list[str]:
    """No job runs before its release, nor before every job it comes after has finished (or at all if one never did)."""
    out = []
    for t in ctx.p.jobs:
        job = ctx.jobs.get(t.job)
        if job is None or not t.segments:
            continue
        begin = t.segments[0].from_hours
        if begin < job.release_hours - TIME_TOL_HOURS:
            out.append(f"job {t.job!r}: runs at {begin:g} h, before its release at {job.release_hours:g} h")
        for pred in job.after:
            other = ctx.timelines.get(pred)
            if other is None or not other.segments or other.finish_hours is None:
                out.append(f"job {t.job!r}: runs although {pred!r}, which it comes after, never finished")
                continue
            end = other.segments[-1].to_hours
            if begin < end - TIME_TOL_HOURS:
                out.append(
                    f"job {t.job!r}: starts at {begin:g} h, before {pred!r} (which it comes after) ends at {end:g} h"
                )
    return out


def check_work(ctx: _Ctx) -> list[str]:
    """Segment speedup = Amdahl S of its devices, work = S x duration; restarts last restart_hours (unless a failure
    cuts them); a finished job's work less its rollbacks sums to work_hours."""
    out: list[str] = []
    for t in ctx.p.jobs:
        job = ctx.jobs.get(t.job)
        if job is None:
            continue
        label = f"job {t.job!r}"
        cost = ctx.restart_cost(job)
        done = 0.0
        restart_run = 0.0

        for k, s in enumerate(t.segments):
            span = s.to_hours - s.from_hours
            if k and s.from_hours > t.segments[k - 1].to_hours + TIME_TOL_HOURS:
                restart_run = _close_restart(ctx, out, label, cost, restart_run, k)
            if s.restart:
                if s.speedup != 0.0 or s.work_hours != 0.0 or s.rolled_back_hours != 0.0:
                    out.append(f"{label}: restart segment {k} reports progress")
                if restart_run and _devices(s) != _devices(t.segments[k - 1]):
                    # Moved to other devices mid-restart (or right after one): a new restart, the last one cut short.
                    if restart_run > cost + TIME_TOL_HOURS:
                        out.append(f"{label}: restart before segment {k} lasted {restart_run:.6g} h, over {cost:g} h")
                    restart_run = 0.0
                restart_run += span
                if ctx.fails_at(s, s.to_hours):
                    if restart_run > cost + TIME_TOL_HOURS:
                        out.append(
                            f"{label}: restart before segment {k + 1} lasted {restart_run:.6g} h, over {cost:g} h"
                        )
                    restart_run = 0.0  # cut short by a failure
                continue
            restart_run = _close_restart(ctx, out, label, cost, restart_run, k)
            speed = ctx.segment_speedup(job, s)
            if not ctx.close(s.speedup, speed):
                out.append(f"{label}: segment {k} reports speedup {s.speedup:.9g}, recomputed {speed:.9g}")
            if not math.isclose(s.work_hours, speed * span, rel_tol=ctx.rel_tol, abs_tol=ctx.rel_tol * job.work_hours):
                out.append(
                    f"{label}: segment {k} reports work {s.work_hours:.9g} h, S x duration = {speed * span:.9g} h"
                )
            done += speed * span - s.rolled_back_hours
        _close_restart(ctx, out, label, cost, restart_run, len(t.segments))
        if t.finish_hours is not None and not math.isclose(done, job.work_hours, rel_tol=ctx.rel_tol, abs_tol=0.0):
            out.append(
                f"{label}: its segments do {done:.9g} reference hours of work net of rollbacks, the job needs "
                f"{job.work_hours:g}"
            )
        if t.finish_hours is None and t.segments and not ctx.stopped(t):
            out.append(f"{label}: has segments but no finish, and no failure of its devices stopped its last one")
        if ctx.stopped(t) and done >= job.work_hours * (1 - ctx.rel_tol):
            out.append(f"{label}: reported stopped, but its segments do all its {job.work_hours:g} h of work")
    return out


def _close_restart(ctx: _Ctx, out: list[str], label: str, cost: float, run: float, k: int) -> float:
    """A restart run that ended before segment k lasted the job's restart cost; returns 0 (the next run's start)."""
    if run and not ctx.close(run, cost):
        out.append(f"{label}: restart before segment {k} lasted {run:.6g} h, its restart_hours is {cost:g} h")
    return 0.0


def check_failures(ctx: _Ctx) -> list[str]:
    """No segment uses a down device; a segment holding a failing device ends then and rolls back exactly the work
    since the job's last checkpoint; no other segment rolls back; each event lists the devices down."""
    out = []
    for t in ctx.p.jobs:
        job = ctx.jobs.get(t.job)
        if job is None:
            continue
        label = f"job {t.job!r}"
        every = ctx.checkpoint_every(job)
        origin: float | None = None  # where the checkpoint clock of the current stretch of progress started
        stretch: list[Segment] = []
        previous: Segment | None = None
        for k, s in enumerate(t.segments):
            for alloc in s.allocations:
                for i in alloc.devices:
                    for a, b in ctx.down.get((alloc.device, i), ()):
                        if s.from_hours < b - TIME_TOL_HOURS and a < s.to_hours - TIME_TOL_HOURS:
                            out.append(
                                f"{label}: segment {k} uses {alloc.device!r}[{i}] while it is down ({a:g}-{b:g} h)"
                            )
            if s.restart:
                origin, stretch = None, []
            else:
                same = (
                    previous is not None
                    and not previous.restart
                    and previous.rolled_back_hours == 0.0
                    and abs(previous.to_hours - s.from_hours) <= TIME_TOL_HOURS
                    and _devices(previous) == _devices(s)
                )
                if origin is None or not same:
                    origin, stretch = s.from_hours, []
                stretch.append(s)
            # A job that completes at the instant its device fails keeps its result: completion comes first.
            completes = (
                k == len(t.segments) - 1
                and t.finish_hours is not None
                and abs(t.finish_hours - s.to_hours) <= TIME_TOL_HOURS
            )
            hit = ctx.fails_at(s, s.to_hours) and not completes
            if hit and origin is not None:  # origin is None exactly on a restart
                saved = origin + every * math.floor((s.to_hours - origin) / every + 1e-9)
                want = sum(x.speedup * max(0.0, x.to_hours - max(x.from_hours, saved)) for x in stretch)
                if not math.isclose(
                    s.rolled_back_hours, want, rel_tol=ctx.rel_tol, abs_tol=ctx.rel_tol * job.work_hours
                ):
                    out.append(
                        f"{label}: segment {k} ends at a failure and rolls back {s.rolled_back_hours:.9g} h, the work "
                        f"since its last checkpoint (at {saved:g} h) is {want:.9g} h"
                    )
            elif s.rolled_back_hours != 0.0:
                out.append(f"{label}: segment {k} rolls back work although none of its devices fails at its end")
            previous = s
    expected = _down_at([e.at_hours + TIME_TOL_HOURS for e in ctx.p.events], ctx.down)
    for e, down in zip(ctx.p.events, expected, strict=True):
        got = {d: list(ix) for d, ix in e.down.items()}
        if got != down:
            out.append(f"event at {e.at_hours:g} h: reports devices down {got}, the failures give {down}")
    return out


def _down_at(
    instants: list[float], spans: Mapping[tuple[str, int], list[tuple[float, float]]]
) -> list[dict[str, list[int]]]:
    """Per instant t, the devices down at t (a <= t < b for one of their spans), by group, indices rising.

    A sweep over the instants in time order, adding spans as they start and dropping them as they end, so the
    cost is O((instants + spans) log spans) plus the listing of what is down; instants between which nothing
    changed share one listing."""
    starts = sorted((a, b, key) for key, pairs in spans.items() for a, b in pairs)
    ends: list[tuple[float, tuple[str, int]]] = []
    active: dict[tuple[str, int], int] = defaultdict(int)
    out: list[dict[str, list[int]]] = [{} for _ in instants]
    listing: dict[str, list[int]] | None = None
    k = 0
    for n in sorted(range(len(instants)), key=lambda n: instants[n]):
        t = instants[n]
        changed = False
        while k < len(starts) and starts[k][0] <= t:
            _, b, key = starts[k]
            active[key] += 1
            heapq.heappush(ends, (b, key))
            k += 1
            changed = True
        while ends and ends[0][0] <= t:
            key = heapq.heappop(ends)[1]
            active[key] -= 1
            if not active[key]:
                del active[key]
            changed = True
        if listing is None or changed:
            listing = {}
            for device, i in sorted(active):
                listing.setdefault(device, []).append(i)
        out[n] = {d: list(ix) for d, ix in listing.items()}
    return out


def _devices(seg: Segment) -> set[tuple[str, int]]:
    return {(a.device, i) for a in seg.allocations for i in a.devices}


def check_budgets(ctx: _Ctx) -> list[str]:
    """At every instant the fleet draw fits the global budget in force and each domain's draw its budget (W)."""
    out = []
    for a, b, total, by_domain in ctx.profile:
        mid = (a + b) / 2
        budget = ctx.budget_at(mid)
        if budget is not None and total > budget * (1 + ctx.rel_tol) + ctx.rel_tol:
            out.append(f"power: {total:.6g} W drawn over {a:g}-{b:g} h exceeds the global budget {budget:g} W in force")
        for domain, limit in sorted(ctx.w.power.domains.items()):
            draw = by_domain.get(domain, 0.0)
            if draw > limit * (1 + ctx.rel_tol) + ctx.rel_tol:
                out.append(f"power domain {domain!r}: {draw:.6g} W over {a:g}-{b:g} h exceeds its budget {limit:g} W")
    return out


def check_events(ctx: _Ctx) -> list[str]:
    """Events are in time order; each reports the draw from then on and the budgets in force at that instant."""
    out = []
    last = -math.inf
    for e in ctx.p.events:
        label = f"event at {e.at_hours:g} h"
        if e.at_hours < last - TIME_TOL_HOURS:
            out.append(f"{label}: out of order")
        last = e.at_hours
        if e.at != ctx.iso(e.at_hours):
            out.append(f"{label}: timestamp {e.at} does not match")
        total, by_domain = ctx.draw_at(e.at_hours)
        if not ctx.close(e.power_w, total):
            out.append(f"{label}: reports {e.power_w:.9g} W, the segments draw {total:.9g} W")
        for domain, draw in sorted(by_domain.items()):
            if not ctx.close(e.power_by_domain.get(domain, 0.0), draw):
                out.append(
                    f"{label}: reports {e.power_by_domain.get(domain)} W in domain {domain!r}, recomputed {draw:.9g} W"
                )
        budget = ctx.budget_at(e.at_hours + TIME_TOL_HOURS)
        if e.budget_w != budget:
            out.append(f"{label}: reports budget {e.budget_w} W, {budget} W is in force")
        if dict(e.budget_by_domain) != dict(ctx.w.power.domains):
            out.append(
                f"{label}: reports domain budgets {dict(e.budget_by_domain)}, the queue has {dict(ctx.w.power.domains)}"
            )
    return out


def check_deadlines(ctx: _Ctx) -> list[str]:
    """deadline_met = finish <= deadline (null without one, false if never ran); misses and unrun jobs carry a
    reason."""
    out = []
    for t in ctx.p.jobs:
        job = ctx.jobs.get(t.job)
        if job is None:
            continue
        want = None
        if job.deadline_hours is not None:
            want = t.finish_hours is not None and t.finish_hours <= job.deadline_hours * (1 + ctx.rel_tol)
        if t.deadline_met is not want:
            out.append(f"job {t.job!r}: reports deadline_met {t.deadline_met}, recomputed {want}")
        if (want is False or t.finish_hours is None) and not t.reason:
            out.append(f"job {t.job!r}: missed its deadline or never ran but gives no reason")
        if job.deadline_hours is not None and t.deadline != ctx.iso(job.deadline_hours):
            out.append(f"job {t.job!r}: deadline timestamp {t.deadline} does not match")
    return out


def check_summary(ctx: _Ctx) -> list[str]:
    """Status, makespan, misses, finished-by-night, weighted mean completion, energy and peak match the timeline."""
    out = []
    s = ctx.p.summary
    finished = [(t, t.finish_hours) for t in ctx.p.jobs if t.finish_hours is not None]
    makespan = max((f for _, f in finished), default=0.0)
    horizon = max(ctx.p.hours, makespan)
    hard = {t.job for t in ctx.p.jobs if Priority(t.priority) in HARD_PRIORITIES}
    hard_missed = sorted(
        t.job for t in ctx.p.jobs if t.job in hard and (t.deadline_met is False or t.finish_hours is None)
    )
    never = sorted(t.job for t in ctx.p.jobs if t.finish_hours is None)
    status = NightStatus.met if not hard_missed and not never else NightStatus.missed
    weights = {j.id: job_weight(j) for j in ctx.w.jobs}
    total_weight = sum(weights.get(t.job, 0.0) for t, _ in finished)
    wmct = sum(weights.get(t.job, 0.0) * f for t, f in finished) / total_weight if total_weight else None
    energy = sum(total * (min(b, horizon) - a) for a, b, total, _ in ctx.profile if a < horizon) / 1000.0
    idle = sum(g.idle_w * g.count for g in ctx.w.devices)
    energy += idle * max(0.0, horizon - max((b for _, b, _, _ in ctx.profile), default=0.0)) / 1000.0
    peak = max((total for _, _, total, _ in ctx.profile), default=idle)
    by_night = sum(1 for _, f in finished if f <= ctx.p.hours + 1e-9)
    work_by_night = sum(t.work_hours for t, f in finished if f <= ctx.p.hours + 1e-9)
    lost = sum(s.rolled_back_hours for t in ctx.p.jobs for s in t.segments)
    checks: list[tuple[str, Any, Any]] = [
        ("status", ctx.p.status, status),
        ("summary.status", s.status, status),
        ("hard_deadlines_missed", sorted(s.hard_deadlines_missed), hard_missed),
        ("never_ran", sorted(s.never_ran), never),
        ("stopped", sorted(s.stopped), sorted(t.job for t in ctx.p.jobs if ctx.stopped(t))),
        ("finished_by_end_of_night", s.finished_by_end_of_night, by_night),
    ]
    for name, got, want in checks:
        if got != want:
            out.append(f"summary: {name} is {got!r}, the timeline gives {want!r}")
    numbers = [
        ("makespan_hours", s.makespan_hours, makespan),
        ("horizon_hours", s.horizon_hours, horizon),
        ("energy_kwh", s.energy_kwh, energy),
        ("peak_power_w", s.peak_power_w, peak),
        ("work_finished_by_end_of_night_hours", s.work_finished_by_end_of_night_hours, work_by_night),
        ("lost_work_hours", s.lost_work_hours, lost),
    ]
    if wmct is not None or s.weighted_mean_completion_hours is not None:
        numbers.append(("weighted_mean_completion_hours", s.weighted_mean_completion_hours or 0.0, wmct or 0.0))
    for name, got, want in numbers:
        if not ctx.close(got, want):
            out.append(f"summary: {name} is {got:.9g}, the timeline gives {want:.9g}")
    for t in ctx.p.jobs:
        lost_here = sum(x.rolled_back_hours for x in t.segments)
        runs = sum(
            1
            for k, x in enumerate(t.segments)
            if x.restart
            and not (
                k
                and t.segments[k - 1].restart
                and abs(t.segments[k - 1].to_hours - x.from_hours) <= TIME_TOL_HOURS
                and _devices(t.segments[k - 1]) == _devices(x)
            )
        )
        if not ctx.close(t.lost_work_hours, lost_here) or t.restarts != runs:
            out.append(
                f"job {t.job!r}: reports {t.restarts} restarts and {t.lost_work_hours:g} h lost, the segments give "
                f"{runs} and {lost_here:g} h"
            )
    if s.restarts != sum(t.restarts for t in ctx.p.jobs):
        out.append(f"summary: restarts is {s.restarts}, the jobs give {sum(t.restarts for t in ctx.p.jobs)}")
    return out


def check_team_shares(ctx: _Ctx) -> list[str]:
    """Each team's device-hours (restarts included, cut at the horizon) and their share match the segments."""
    s = ctx.p.summary
    if not s.teams:
        return []
    team_of = {j.id: (j.id if j.team is None else j.team) for j in ctx.w.jobs}
    held: dict[str, float] = {}
    for t in ctx.p.jobs:
        hours = sum(
            len(a.devices) * max(0.0, min(x.to_hours, s.horizon_hours) - x.from_hours)
            for x in t.segments for a in x.allocations
        )
        name = team_of.get(t.job, t.job)
        held[name] = held.get(name, 0.0) + hours
    total = sum(held.values())
    out = []
    for team in s.teams:
        want = held.get(team.team, 0.0)
        share = want / total if total > 0 else 0.0
        if not ctx.close(team.device_hours, want) or not ctx.close(team.device_hours_share, share):
            out.append(f"summary: team {team.team!r} reports {team.device_hours:.9g} device-hours "
                       f"({team.device_hours_share:.4f}), the segments give {want:.9g} ({share:.4f})")
    return out


def check_fairness(ctx: _Ctx) -> list[str]:
    """The summary's finish-time fairness (largest rho, each team's worst) and, under a fairness objective, its
    value by morning, recomputed from the segments and the queue (docs/guides/fairness.md)."""
    s, w = ctx.p.summary, ctx.w
    rho = {}
    for t in ctx.p.jobs:
        job = ctx.jobs.get(t.job)
        share = _equal_share(w, job) if job is not None else 0.0
        if job is not None and t.finish_hours is not None and share > 0 and job.work_hours > 0:
            rho[t.job] = (t.finish_hours - job.release_hours) * share / job.work_hours
    out = []
    if not _same(ctx, s.max_rho, max(rho.values(), default=None)):
        out.append(f"summary: max_rho is {s.max_rho!r}, the timeline gives {max(rho.values(), default=None)!r}")
    for team in s.teams:
        worst = max((r for j, r in rho.items() if ctx.jobs[j].team_name == team.team), default=None)
        if not _same(ctx, team.worst_rho, worst):
            out.append(
                f"summary: team {team.team!r} reports worst rho {team.worst_rho!r}, the timeline gives {worst!r}"
            )
    want = _fairness_by_morning(ctx) if w.objective in FAIR_OBJECTIVES else None
    if not _same(ctx, s.fairness, want):
        out.append(f"summary: fairness is {s.fairness!r}, the segments give {want!r} ({w.objective})")
    return out


def _equal_share(w: NightQueue, job: NightJob) -> float:
    """S^equal: the job on 1/n of every eligible group (n the queue's jobs) at its fastest level, at most
    max_devices, the fastest device the host; below one device, that device time-shared."""
    n = max(1, len(w.jobs))
    units = [
        (g.count / n, max(lv.speed for lv in g.power_levels) * job.speed_on.get(g.model, 1.0))
        for g in w.devices
        if (job.memory_gb is None or (g.memory_gb is not None and g.memory_gb >= job.memory_gb))
        and (job.allowed_models is None or g.model in job.allowed_models)
    ]
    devices = sum(c for c, _ in units)
    if not devices:
        return 0.0
    scale = min(1.0, job.max_devices / devices) if job.max_devices is not None else 1.0
    host = max(v for _, v in units)
    r = scale * sum(c * v for c, v in units)
    p = job.parallel_fraction
    return r if r <= host else 1.0 / ((1.0 - p) / host + p / r)


def _fairness_by_morning(ctx: _Ctx) -> float:
    """min_j x_j / weight_j, or min over teams of summed x_j / share; x_j the share of job j's work done by the
    night's end (each segment's work pro rata, less the work rolled back by failures before then)."""
    hours = ctx.p.hours
    x = {}
    for t in ctx.p.jobs:
        done = sum(
            seg.work_hours * max(0.0, min(1.0, (hours - seg.from_hours) / (seg.to_hours - seg.from_hours)))
            - (seg.rolled_back_hours if seg.to_hours <= hours else 0.0)
            for seg in t.segments if seg.to_hours > seg.from_hours
        )
        x[t.job] = max(0.0, min(1.0, done / t.work_hours)) if t.work_hours > 0 else 1.0
    if ctx.w.objective == "team_max_min":
        teams: dict[str, float] = {}
        for job in ctx.w.jobs:
            teams[job.team_name] = teams.get(job.team_name, 0.0) + x.get(job.id, 0.0)
        shares = ctx.w.team_shares()
        return min((v / shares[t] for t, v in teams.items()), default=0.0)
    return min((x.get(job.id, 0.0) / job.weight for job in ctx.w.jobs), default=0.0)


CHECKS: tuple[Callable[[_Ctx], list[str]], ...] = (
    check_jobs_listed,
    check_segments,
    check_allocations,
    check_devices_exclusive,
    check_release_and_dependencies,
    check_work,
    check_failures,
    check_budgets,
    check_events,
    check_deadlines,
    check_summary,
    check_team_shares,
    check_fairness,
)


def _same(ctx: _Ctx, a: float | None, b: float | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and ctx.close(a, b))


def load_night_plan(plan: NightPlan | Mapping[str, Any] | str | Path) -> NightPlan:
    """A NightPlan from an object, a dict, JSON text, a JSON file or an output directory (timeline + summary)."""
    if isinstance(plan, NightPlan):
        return plan
    if isinstance(plan, Path) or (isinstance(plan, str) and not plan.lstrip().startswith("{")):
        folder = Path(plan)
        if folder.is_dir():
            try:
                document = json.loads((folder / "timeline.json").read_text("utf-8"))
                document["summary"] = json.loads((folder / "summary.json").read_text("utf-8"))
            except (OSError, ValueError) as exc:
                raise InvalidPlan([FieldError("", f"cannot read the night plan in {folder}: {exc}")]) from None
            plan = document
    if isinstance(plan, (str, Path)):
        plan = read_plan_document(plan)
    try:
        return NightPlan.model_validate(plan)
    except ValidationError as exc:
        raise InvalidPlan(field_errors(exc)) from None


def verify_timeline(
    queue: NightQueue | Any, night_plan: NightPlan | Mapping[str, Any] | str | Path, *, rel_tol: float = 1e-6
) -> list[str]:
    """Every violation of the night plan against the queue, recomputed from its segments alone ([] = valid)."""
    w = NightQueue.load(queue)
    p = load_night_plan(night_plan)
    ctx = _Ctx(w, p, rel_tol)
    problems: list[str] = []
    for check in CHECKS:
        problems.extend(check(ctx))
    return problems
