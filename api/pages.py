"""What the viewer's pages show, built from the result schemas alone: table rows in clock times and the chart data
the page's script draws (embedded in the page as JSON, read by api/static/viewer.js).

Night plans are read only through the NightPlan schema (optsched.schema.night): times there are hours after the
night starts; here they become the clock times of the night's own time zone (the one its start was given in).
"""

from __future__ import annotations

from calendar import timegm
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, overload

from optsched.explain.frontier import Frontier
from optsched.schema.night import JobTimeline, NightEvent, NightPlan
from optsched.schema.plan import Plan

PRIORITIES = ("critical", "high", "normal", "low")
EPS = 1e-9


# -- clock times ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Clock:
    """An instant of the night for people: `text` HH:MM, `day` (e.g. "Wed 2 Dec") when its date is not the
    night's first, `iso` for <time datetime>, `offset` the hours after the start."""

    text: str
    day: str
    iso: str
    offset: str


@overload
def clock(start: datetime, hours: float) -> Clock: ...


@overload
def clock(start: datetime, hours: None) -> None: ...


def clock(start: datetime, hours: float | None) -> Clock | None:
    """`hours` after `start` as a clock time, rounded to the minute (None stays None)."""
    if hours is None:
        return None
    exact = start + timedelta(hours=hours)
    shown = (exact + timedelta(seconds=30)).replace(second=0, microsecond=0)
    day = "" if shown.date() == start.date() else f"{shown:%a} {shown.day} {shown:%b}"
    return Clock(text=f"{shown:%H:%M}", day=day, iso=exact.isoformat(timespec="seconds"), offset=f"+{hours:.2f} h")


def duration(hours: float | None) -> str:
    """A length of time for people: "45 min", "1 h 05 min" (None: an em dash)."""
    if hours is None:
        return "—"
    minutes = round(hours * 60)
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def watts(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f} W"


def allocation_text(device: str, count: int, cap_w: float) -> str:
    """One allocation as the tables and tooltips show it: `a100 × 4 @ 300 W`."""
    return f"{device} × {count} @ {cap_w:,.0f} W"


# -- night plans ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeviceStretch:
    """The devices a job holds from `since` (None: from its start) until its next stretch."""

    since: Clock | None
    devices: str


@dataclass(frozen=True)
class NightJobRow:
    job: str
    priority: str
    devices: tuple[DeviceStretch, ...]
    release: Clock | None
    start: Clock | None
    finish: Clock | None
    wait: str
    deadline: Clock | None
    met: bool | None
    reason: str | None
    restarts: int
    lost_work: str | None


@dataclass(frozen=True)
class PowerInstant:
    """The fleet's draw from `at` until the next event, against the global budget in force and whose it is."""

    at: Clock
    power_w: float
    budget_w: float | None
    budget_of: str  # "the 22:00–00:00 window" or "the night's budget"; "" when there is no budget

    @property
    def share(self) -> float | None:
        return self.power_w / self.budget_w if self.budget_w else None


@dataclass(frozen=True)
class NightView:
    rows: tuple[NightJobRow, ...]
    peak: PowerInstant | None  # the highest draw
    tightest: PowerInstant | None  # the highest share of the budget in force, when at another instant than the peak
    end: Clock
    last_finish: Clock | None  # when the last job finishes (the makespan), None if nothing ran
    chart: dict[str, Any]


def night_view(night: NightPlan) -> NightView:
    """The night page's tables and chart data."""
    peak, tightest = _peak_instants(night)
    return NightView(
        rows=tuple(_night_row(night, j) for j in night.jobs),
        peak=peak,
        tightest=tightest,
        end=clock(night.start, night.hours),
        last_finish=clock(night.start, night.summary.makespan_hours) if night.summary.makespan_hours > 0 else None,
        chart=night_chart(night),
    )


def _night_row(night: NightPlan, j: JobTimeline) -> NightJobRow:
    return NightJobRow(
        job=j.job,
        priority=j.priority,
        devices=_stretches(night, j),
        release=clock(night.start, j.release_hours),
        start=clock(night.start, j.start_hours),
        finish=clock(night.start, j.finish_hours),
        wait=duration(j.wait_hours),
        deadline=clock(night.start, j.deadline_hours),
        met=j.deadline_met,
        reason=j.reason,
        restarts=j.restarts,
        lost_work=duration(j.lost_work_hours) if j.lost_work_hours > EPS else None,
    )


def _segment_devices(segment) -> str:
    return " + ".join(allocation_text(a.device, a.count, a.cap_w) for a in segment.allocations)


def _stretches(night: NightPlan, j: JobTimeline) -> tuple[DeviceStretch, ...]:
    """The job's devices, one entry per change of devices or caps (restarts on the same devices are one entry)."""
    stretches: list[tuple[float, str]] = []
    for s in j.segments:
        text = _segment_devices(s)
        if not stretches or stretches[-1][1] != text:
            stretches.append((s.from_hours, text))
    if len(stretches) == 1:
        return (DeviceStretch(None, stretches[0][1]),)
    return tuple(DeviceStretch(clock(night.start, at), text) for at, text in stretches)


def _budget_of(night: NightPlan, event: NightEvent) -> str:
    if event.budget_w is None:
        return ""
    for w in night.power.windows:
        if w.from_hours <= event.at_hours < w.to_hours:
            return f"the {clock(night.start, w.from_hours).text}–{clock(night.start, w.to_hours).text} window"
    return "the night's budget"


def _instant(night: NightPlan, event: NightEvent) -> PowerInstant:
    return PowerInstant(clock(night.start, event.at_hours), event.power_w, event.budget_w, _budget_of(night, event))


def _peak_instants(night: NightPlan) -> tuple[PowerInstant | None, PowerInstant | None]:
    """The first event with the highest draw and, when another instant comes closer to its budget, the first such."""
    if not night.events:
        return None, None
    peak = max(night.events, key=lambda e: e.power_w)  # max keeps the first of equal ones
    tightest = max(night.events, key=_share)
    if _share(tightest) <= _share(peak) + EPS:
        return _instant(night, peak), None
    return _instant(night, peak), _instant(night, tightest)


def _share(event: NightEvent) -> float:
    return event.power_w / event.budget_w if event.budget_w else 0.0


def _start_ms(start: datetime) -> int:
    """The start's wall-clock time as milliseconds of a UTC epoch: the script adds hours and formats in UTC, so it
    shows the night's own clock whatever the browser's time zone."""
    naive = start.replace(tzinfo=None)
    return timegm(naive.timetuple()) * 1000 + naive.microsecond // 1000


def night_chart(night: NightPlan) -> dict[str, Any]:
    """The timeline (a row per device, a bar per job segment and device, devices down) and power over the night."""
    groups = [(u.device, u.count) for u in night.summary.device_utilisation]
    row_of: dict[tuple[str, int], int] = {}
    for device, count in groups:
        for i in range(count):
            row_of[(device, i)] = len(row_of)
    jobs: list[dict[str, Any]] = []
    segments: list[dict[str, Any]] = []
    bars: list[dict[str, Any]] = []
    for k, j in enumerate(night.jobs):
        jobs.append(
            {
                "id": j.job,
                "priority": j.priority,
                "release": j.release_hours,
                "start": j.start_hours,
                "finish": j.finish_hours,
                "deadline": j.deadline_hours,
                "met": j.deadline_met,
                "reason": j.reason,
                "restarts": j.restarts,
            }
        )
        for s in j.segments:
            segment = {"job": k, "from": s.from_hours, "to": s.to_hours, "restart": s.restart, "speedup": s.speedup,
                       "devices": _segment_devices(s)}
            for a in s.allocations:
                bars.extend({"seg": len(segments), "row": row_of[(a.device, i)], "cap": a.cap_w} for i in a.devices)
            segments.append(segment)
    horizon = max(night.hours, night.summary.makespan_hours, night.events[-1].at_hours if night.events else 0.0)
    return {
        "kind": "night",
        "queue": night.queue,
        "startMs": _start_ms(night.start),
        "zone": night.start.strftime("%z"),
        "hours": night.hours,
        "horizon": horizon,
        "groups": [{"id": d, "count": c, "first": row_of.get((d, 0), 0)} for d, c in groups],
        "rows": [f"{d} #{i}" for d, i in row_of],
        "jobs": jobs,
        "segments": segments,
        "bars": bars,
        "down": _down_intervals(night, row_of, horizon),
        "windows": [{"from": w.from_hours, "to": w.to_hours, "budget": w.budget_w} for w in night.power.windows],
        "power": _power_series(night),
    }


def _down_intervals(night: NightPlan, row_of: dict[tuple[str, int], int], horizon: float) -> list[dict[str, Any]]:
    """Per device row, the intervals it is down (failed, not yet repaired), from the events' `down` sets."""
    intervals: list[dict[str, Any]] = []
    since: dict[int, float] = {}
    for e in night.events:
        now = {row_of[(d, i)] for d, indices in e.down.items() for i in indices if (d, i) in row_of}
        for row in sorted(set(since) - now):
            intervals.append({"row": row, "from": since.pop(row), "to": e.at_hours})
        for row in sorted(now - set(since)):
            since[row] = e.at_hours
    intervals.extend({"row": row, "from": at, "to": horizon} for row, at in sorted(since.items()))
    return intervals


def _power_series(night: NightPlan) -> dict[str, Any]:
    """Per event: when, the fleet draw, the global budget in force and whose it is; per domain its draw and budget."""
    events = night.events
    domains = sorted({d for e in events for d in e.power_by_domain} | set(night.power.domains))
    return {
        "t": [e.at_hours for e in events],
        "power": [e.power_w for e in events],
        "budget": [e.budget_w for e in events],
        "budgetOf": [_budget_of(night, e) for e in events],
        "domains": [
            {
                "id": d,
                "power": [e.power_by_domain.get(d, 0.0) for e in events],
                "budget": [e.budget_by_domain.get(d) for e in events],
            }
            for d in domains
        ],
    }


# -- plans and frontiers -------------------------------------------------------------------------------------------


def plan_chart(plan: Plan) -> dict[str, Any]:
    """The placement: a row per device group, a bar per job and cap level as a share of the group's devices."""
    groups = [
        {"id": d.device, "model": d.model, "count": d.used + d.idle, "used": d.used, "idle": d.idle, "power": d.power_w}
        for d in plan.devices
    ]
    index = {g["id"]: k for k, g in enumerate(groups)}
    filled = [0] * len(groups)
    jobs, bars = [], []
    for k, p in enumerate(plan.placements):
        jobs.append(
            {
                "id": p.job,
                "priority": p.priority,
                "admitted": p.admitted,
                "speedup": p.speedup,
                "runtime": p.runtime_hours,
                "deadline": p.deadline_hours,
                "met": p.meets_deadline,
                "devices": " + ".join(allocation_text(a.device, a.count, a.cap_w) for a in p.allocations),
            }
        )
        for a in p.allocations:
            g = index.get(a.device)
            if g is None or not groups[g]["count"]:
                continue
            bars.append({"job": k, "group": g, "first": filled[g], "count": a.count, "cap": a.cap_w})
            filled[g] += a.count
    return {"kind": "plan", "workload": plan.workload, "groups": groups, "jobs": jobs, "bars": bars}


def frontier_chart(frontier: Frontier) -> dict[str, Any]:
    """The curve: a point per budget with what it buys, and the budgets worth marking."""
    return {
        "kind": "frontier",
        "workload": frontier.workload,
        "points": [
            {
                "budget": p.budget_w,
                "status": p.status.value,
                "speedup": p.weighted_speedup,
                "power": p.power_w,
                "admitted": p.admitted,
                "met": p.hard_deadlines_met,
                "hard": p.hard_deadlines,
                "gap": p.gap,
            }
            for p in frontier.points
        ],
        "marks": [
            {"label": label, "budget": value}
            for label, value in (
                ("least feasible", frontier.least_feasible_w),
                ("knee", frontier.knee_budget_w),
                ("current budget", frontier.current_budget_w),
                ("saturation", frontier.saturation_w),
            )
            if value is not None
        ],
    }
