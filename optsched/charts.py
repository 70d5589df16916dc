"""Charts as PNG bytes (matplotlib, Agg, no pyplot state): for night plans a Gantt chart per device and power over
time; for plans the placement of jobs on device groups.

Byte-for-byte deterministic for the same plan: fixed sizes and dpi, no timestamps or software tags in the file.
"""

from __future__ import annotations

import io
from datetime import timedelta
from typing import TYPE_CHECKING

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from optsched.schema.night import NightPlan
from optsched.schema.plan import Plan
from optsched.schema.workload import Priority

if TYPE_CHECKING:
    from optsched.queueing.schema import StudyResult

DPI = 100
WIDTH_IN = 14.0
PNG_METADATA = {"Software": None}  # matplotlib otherwise writes its version into the file
MAX_LEGEND_JOBS = 24
# Placement bars are coloured by the job's priority.
PRIORITY_COLOURS = {"critical": "#d62728", "high": "#ff7f0e", "normal": "#1f77b4", "low": "#8c8c8c"}
IDLE_COLOUR = "#eeeeee"
# Characters of 7-point text per percent of the placement axis width (about 9 px per percent, 4.5 px per character).
CHARS_PER_PERCENT = 2.0


def gantt_png(plan: NightPlan) -> bytes:
    """One row per device, bars coloured by job, deadline markers (red when missed), the night's end dashed."""
    rows = [(u.device, i) for u in plan.summary.device_utilisation for i in range(u.count)]
    row_of = {r: k for k, r in enumerate(rows)}
    fig = Figure(figsize=(WIDTH_IN, max(4.0, 1.6 + 0.24 * len(rows))), dpi=DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    colours = _job_colours(plan)
    for job in plan.jobs:
        runs: dict[int, list[list[float]]] = {}  # row -> [from, to] stretches the job holds the device
        for seg in job.segments:
            for alloc in seg.allocations:
                shade = _cap_shade(plan, alloc.device, alloc.cap_w)
                for i in alloc.devices:
                    row = row_of[(alloc.device, i)]
                    ax.barh(
                        row,
                        seg.to_hours - seg.from_hours,
                        left=seg.from_hours,
                        height=0.8,
                        linewidth=0,
                        color=colours[job.job],
                        alpha=shade,
                        hatch="//" if seg.restart else None,
                    )
                    stretch = runs.setdefault(row, [])
                    if stretch and abs(stretch[-1][1] - seg.from_hours) < 1e-9:
                        stretch[-1][1] = seg.to_hours
                    else:
                        stretch.append([seg.from_hours, seg.to_hours])
        for row, stretches in runs.items():
            for a, b in stretches:
                ax.barh(row, b - a, left=a, height=0.8, fill=False, edgecolor="black", linewidth=0.6)
        _deadline_marker(ax, job, row_of, colours[job.job])
    _down_bars(ax, plan, row_of)
    _label_wide_bars(ax, plan, row_of)
    ax.axvline(plan.hours, color="black", linestyle="--", linewidth=1.0)
    ax.set_yticks(range(len(rows)), [f"{d}[{i}]" for d, i in rows], fontsize=7)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    _time_axis(ax, plan)
    ax.set_ylabel("device")
    status = (
        "every hard deadline met" if plan.ok else f"hard deadlines missed: {len(plan.summary.hard_deadlines_missed)}"
    )
    ax.set_title(
        f"{plan.queue} - {plan.policy}: {len(plan.jobs)} jobs, makespan {plan.summary.makespan_hours:.2f} h, {status}"
    )
    handles = [Patch(color=colours[j.job], label=j.job) for j in plan.jobs if j.segments][:MAX_LEGEND_JOBS]
    handles += [
        Patch(facecolor="white", edgecolor="black", label="deadline met (|), missed (red x)"),
        Patch(facecolor="grey", alpha=0.45, edgecolor="black", label="paler = lower power cap"),
        Patch(facecolor="white", edgecolor="black", hatch="//", label="restart (preemption, move, failure)"),
    ]
    if plan.failures:
        handles.append(Patch(facecolor="#555555", edgecolor="black", hatch="xx", label="device down (failed)"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, title="jobs", title_fontsize=8)
    ax.grid(axis="x", linewidth=0.3)
    fig.tight_layout()
    return _png(fig)


def _down_bars(ax, plan: NightPlan, row_of) -> None:
    """Dark cross-hatched bars where a device is down (from the events' `down` lists)."""
    end = max(plan.hours, plan.summary.makespan_hours)
    for e, nxt in zip(plan.events, [*(x.at_hours for x in plan.events[1:]), end], strict=True):
        for device, indices in e.down.items():
            for i in indices:
                if (device, i) in row_of and nxt > e.at_hours:
                    ax.barh(
                        row_of[(device, i)], nxt - e.at_hours, left=e.at_hours, height=0.8, color="#555555",
                        hatch="xx", linewidth=0,
                    )


def power_png(plan: NightPlan) -> bytes:
    """Fleet and per-domain draw over the night (W) against the global budget in force and the domain budgets."""
    fig = Figure(figsize=(WIDTH_IN, 5.5), dpi=DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    end = max(plan.hours, plan.summary.makespan_hours)
    times = [e.at_hours for e in plan.events] + [end]
    fleet = [e.power_w for e in plan.events]
    if not plan.events:
        times, fleet = [0.0, end], [0.0]
    ax.stairs(fleet, times, baseline=None, color="tab:blue", linewidth=2.0, label="fleet draw")
    cuts = sorted({0.0, end} | {x for w in plan.power.windows for x in (w.from_hours, w.to_hours) if x < end})
    budgets = [plan.power.budget_at(a) for a in cuts[:-1]]
    if any(b is not None for b in budgets):
        ax.stairs(
            [float("nan") if b is None else b for b in budgets],
            cuts,
            baseline=None,
            color="tab:red",
            linestyle="--",
            linewidth=1.5,
            zorder=3,
            label="global budget in force",
        )
    domains = sorted(plan.events[0].power_by_domain) if plan.events else []
    palette = ["tab:green", "tab:purple", "tab:orange", "tab:brown", "tab:pink", "tab:olive", "tab:cyan", "tab:gray"]
    for k, domain in enumerate(domains):
        colour = palette[k % len(palette)]
        ax.stairs(
            [e.power_by_domain.get(domain, 0.0) for e in plan.events],
            times,
            baseline=None,
            color=colour,
            linewidth=1.0,
            label=f"domain {domain} draw",
        )
        limit = plan.power.domains.get(domain)
        if limit is not None:
            ax.axhline(limit, color=colour, linestyle=":", linewidth=1.0, label=f"domain {domain} budget")
    for k, w in enumerate(sorted(plan.power.windows, key=lambda w: w.from_hours)):
        if w.from_hours < end:
            ax.axvspan(
                w.from_hours, min(w.to_hours, end), color="gold", alpha=0.2, label="power window" if k == 0 else None
            )
            ax.text(
                (w.from_hours + min(w.to_hours, end)) / 2,
                0,
                f"window\n{w.budget_w:,.0f} W",
                ha="center",
                va="bottom",
                fontsize=8,
            )
    ax.axvline(plan.hours, color="black", linestyle="--", linewidth=1.0, label="end of night")
    _time_axis(ax, plan)
    ax.set_ylabel("power (W)")
    ax.set_ylim(bottom=0)
    ax.set_title(
        f"{plan.queue} - {plan.policy}: power over the night; energy {plan.summary.energy_kwh:.1f} kWh, "
        f"peak {plan.summary.peak_power_w:,.0f} W"
    )
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    ax.grid(linewidth=0.3)
    fig.tight_layout()
    return _png(fig)


def _cap_shade(plan: NightPlan, device: str, cap_w: float) -> float:
    """Opacity from 0.45 (the group's lowest cap used in the plan) to 1 (its highest)."""
    caps = [a.cap_w for j in plan.jobs for s in j.segments for a in s.allocations if a.device == device]
    low, high = min(caps), max(caps)
    return 1.0 if high == low else 0.45 + 0.55 * (cap_w - low) / (high - low)


def _png(fig: Figure) -> bytes:
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=DPI, metadata=PNG_METADATA)
    return out.getvalue()


def _job_colours(plan: NightPlan) -> dict[str, tuple]:
    from matplotlib import colormaps

    maps = [colormaps["tab20"], colormaps["tab20b"], colormaps["tab20c"]]
    return {j.job: maps[(k // 20) % 3](k % 20) for k, j in enumerate(plan.jobs)}


def _deadline_marker(ax, job, row_of, colour) -> None:
    if job.deadline_hours is None or not job.segments:
        return
    last = job.segments[-1]
    rows = [row_of[(a.device, i)] for a in last.allocations for i in a.devices]
    missed = job.deadline_met is False
    ax.plot(
        [job.deadline_hours] * len(rows),
        rows,
        linestyle="none",
        marker="x" if missed else "|",
        markersize=9 if missed else 14,
        markeredgewidth=2.5,
        color="red" if missed else "black",
        zorder=5,
    )


def _label_wide_bars(ax, plan: NightPlan, row_of) -> None:
    """Job ids inside bars long enough to hold them (on the first device of each segment)."""
    span = max(plan.hours, plan.summary.makespan_hours)
    for job in plan.jobs:
        for seg in job.segments:
            if seg.to_hours - seg.from_hours < span * 0.004 * max(len(job.job), 4) or not seg.allocations:
                continue
            first = seg.allocations[0]
            ax.text(
                (seg.from_hours + seg.to_hours) / 2,
                row_of[(first.device, first.devices[0])],
                job.job,
                ha="center",
                va="center",
                fontsize=6,
                clip_on=True,
            )


def _time_axis(ax, plan: NightPlan) -> None:
    end = max(plan.hours, plan.summary.makespan_hours)
    ax.set_xlim(0, end)
    step = 1 if end <= 16 else 2 if end <= 32 else 6
    ticks = list(range(0, int(end) + 1, step))
    ax.set_xticks(ticks, [f"{(plan.start + timedelta(hours=h)).strftime('%H:%M')}\n+{h} h" for h in ticks], fontsize=8)
    ax.set_xlabel(f"time (hours after {plan.start.isoformat(timespec='minutes')})")


def placement_png(plan: Plan) -> bytes:
    """One row per device group, its devices as a 0-100 % bar: a segment per job allocation coloured by the job's
    priority and labelled with the job, the device count and the cap level; idle devices hatched grey."""
    rows = list(plan.devices)
    fig = Figure(figsize=(WIDTH_IN, max(3.2, 1.6 + 0.62 * len(rows))), dpi=DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for row, group in enumerate(rows):
        total = group.used + group.idle
        left = 0.0
        for placement in plan.placements:
            for alloc in placement.allocations:
                if alloc.device != group.device or total == 0:
                    continue
                width = 100.0 * alloc.count / total
                colour = PRIORITY_COLOURS.get(placement.priority, PRIORITY_COLOURS["normal"])
                ax.barh(row, width, left=left, height=0.72, color=colour, edgecolor="white", linewidth=1.0)
                label = _fitting(
                    width,
                    f"{placement.job}\n×{alloc.count} @ {_cap_label(group, alloc.cap_w)}",
                    f"{placement.job}",
                    _cap_label(group, alloc.cap_w),
                )
                if label:
                    ax.text(left + width / 2, row, label, ha="center", va="center", fontsize=7, color="white",
                            clip_on=True, parse_math=False)
                left += width
        if group.idle and total:
            width = 100.0 * group.idle / total
            ax.barh(row, width, left=left, height=0.72, color=IDLE_COLOUR, edgecolor="#bbbbbb", hatch="//",
                    linewidth=0.6)
            label = _fitting(width, f"idle ×{group.idle}", "idle")
            if label:
                ax.text(left + width / 2, row, label, ha="center", va="center", fontsize=7, color="#555555",
                        clip_on=True, parse_math=False)
    ax.set_yticks(
        range(len(rows)),
        [
            f"{g.device}\n{g.model} ×{g.used + g.idle}{f', {g.domain}' if g.domain else ''}\n{g.power_w:,.0f} W"
            for g in rows
        ],
        fontsize=7,
    )
    for tick in ax.get_yticklabels():
        tick.set_parse_math(False)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of the group's devices (%)")
    budget = f" of {plan.budget_w:,.0f} W" if plan.budget_w is not None else ""
    objective = f"{plan.objective:.4g}" if plan.objective is not None else "none"
    ax.set_title(
        f"{plan.workload}: {plan.status.value}, {plan.objective_name} {objective}, {plan.power_w:,.0f} W{budget}",
        parse_math=False,
    )
    handles = [Patch(color=c, label=p) for p, c in PRIORITY_COLOURS.items()]
    handles.append(Patch(facecolor=IDLE_COLOUR, edgecolor="#bbbbbb", hatch="//", label="idle"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="priority",
              title_fontsize=8)
    ax.grid(axis="x", linewidth=0.3)
    fig.tight_layout()
    return _png(fig)


def _cap_label(group, cap_w: float) -> str:
    """`300 W (L2/3)`: the cap and its level among the group's levels, lowest first."""
    caps = sorted({c for c, _ in group.power_levels})
    level = next((k for k, c in enumerate(caps) if abs(c - cap_w) <= 1e-6 * max(1.0, c)), None)
    return f"{cap_w:,.0f} W" + (f" (L{level + 1}/{len(caps)})" if level is not None else "")


def _fitting(width_percent: float, *labels: str) -> str | None:
    """The first label whose longest line fits in a bar `width_percent` wide, or None."""
    room = width_percent * CHARS_PER_PERCENT
    return next((label for label in labels if max(len(line) for line in label.split("\n")) <= room), None)


def queueing_front_png(result: StudyResult) -> bytes:
    """Mean power (kW) against the high-priority class's mean response (h) along a queueing study's Pareto front,
    each point labelled with its caps; the chosen caps starred, the high-priority target dashed."""
    from matplotlib.lines import Line2D

    fig = Figure(figsize=(9.0, 5.5), dpi=DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    points = result.front
    names = [c.name for c in result.classes]
    ax.plot([p.mean_power_w / 1000 for p in points], [p.high_priority_response_hours for p in points],
            marker="o", color="tab:blue", label="Pareto front (analytic)")
    for p in points:
        label = "/".join(f"{p.caps[n]:g}" for n in names)
        ax.annotate(label, (p.mean_power_w / 1000, p.high_priority_response_hours), textcoords="offset points",
                    xytext=(4, 4), fontsize=7, color="tab:green" if p.meets_targets else "grey")
    first = min((c.priority for c in result.classes), key=list(Priority).index)  # the level served first
    top = [c for c in result.classes if c.priority == first]
    if result.stable and result.mean_power_w is not None and all(c.mean_response_hours is not None for c in top):
        rate = sum(c.arrival_rate_per_hour for c in top)
        chosen = sum(c.arrival_rate_per_hour * (c.mean_response_hours or 0.0) for c in top) / rate
        ax.scatter([result.mean_power_w / 1000], [chosen], marker="*", s=220, color="tab:orange", zorder=3,
                   label=f"chosen ({result.method.value})")
    targets = {c.target_response_hours for c in top if c.target_response_hours is not None}
    if len(targets) == 1:
        ax.axhline(targets.pop(), color="tab:red", linestyle="--", linewidth=1.0, label="high-priority target")
    ax.set_xlabel("mean power (kW)")
    ax.set_ylabel(f"mean response of {', '.join(c.name for c in top)} (h)")
    ax.set_title(f"{result.study}: power against high-priority response ({result.discipline.value}, "
                 f"{result.servers} servers of {result.devices_per_job} x {result.device_model})", fontsize=10)
    ax.grid(alpha=0.3)
    handles, _ = ax.get_legend_handles_labels()
    handles.append(Line2D([], [], linestyle="", label="labels: caps (W) " + "/".join(names)))
    ax.legend(handles=handles, loc="upper right", fontsize="small")
    fig.tight_layout()
    return _png(fig)

