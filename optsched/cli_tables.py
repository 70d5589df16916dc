"""The CLI's tables for people (rich): a plan fitted to the console's width, and a re-plan's changes."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from optsched.replan.schema import Replan
from optsched.schema.plan import Placement, Plan

# Below this many columns the jobs are listed one block each instead of as a table.
TABLE_MIN_WIDTH = 90


def print_plan_table(plan: Plan, console: Console) -> None:
    """The plan for people, fitted to the console's width: ids and device lists wrap (folded mid-word when they
    must), never cut; on a narrow console each job is a block of lines."""
    gap = "-" if plan.gap is None else f"{plan.gap:.2%}"
    objective = "-" if plan.objective is None else f"{plan.objective:,.4g}"
    console.print(
        f"[bold]{escape(plan.workload)}[/]: {plan.status.value}, {plan.objective_name} = {objective} "
        f"(gap {gap}), power {plan.power_w:,.0f} W, solved in {plan.solve_seconds:.2f} s",
        highlight=False,
    )
    rows = [_placement_cells(p) for p in plan.placements]
    if console.width >= TABLE_MIN_WIDTH:
        jobs = Table()
        jobs.add_column("job", overflow="fold", ratio=3, min_width=12)
        jobs.add_column("priority", no_wrap=True)
        for name in ("speedup", "runtime h", "deadline h"):
            jobs.add_column(name, justify="right", no_wrap=True)
        jobs.add_column("met", no_wrap=True)
        jobs.add_column("devices (count x cap W)", overflow="fold", ratio=2, min_width=14)
        for job, priority, speedup, runtime, deadline, met, devices in rows:
            jobs.add_row(escape(job), priority, speedup, runtime, deadline, met, escape("\n".join(devices)))
        console.print(jobs)
    else:
        for job, priority, speedup, runtime, deadline, met, devices in rows:
            console.print(f"[bold]{escape(job)}[/]", overflow="fold", highlight=False)
            facts = [priority] + ([f"speedup {speedup}", f"runtime {runtime} h"] if speedup != "-" else [])
            facts += [f"deadline {deadline} h, met {met}"] if deadline != "-" else []
            console.print("  " + ", ".join(facts), overflow="fold", highlight=False, markup=False)
            for line in devices:
                console.print(f"    {line}", overflow="fold", highlight=False, markup=False)
    power = Table("power scope", "drawn W", "budget W")
    power.columns[0].overflow = "fold"
    power.add_row("fleet", f"{plan.power_w:,.0f}", _watts(plan.budget_w))
    for domain, watts in plan.power_by_domain.items():
        power.add_row(escape(domain), f"{watts:,.0f}", _watts(plan.budget_by_domain.get(domain)))
    console.print(power)
    if plan.fairness is not None:
        console.print(f"fairness {plan.fairness:.4g}, weighted speedup {plan.weighted_speedup:,.4g}", highlight=False)
    if plan.teams:
        teams = Table("team", "share", "devices", "device share", "normalised speedup")
        teams.columns[0].overflow = "fold"
        for t in plan.teams:
            normalised = "-" if t.normalised_speedup is None else f"{t.normalised_speedup:.3f}"
            teams.add_row(escape(t.team), f"{t.share:.1%}", str(t.devices), f"{t.device_share:.1%}", normalised)
        console.print(teams)


def _placement_cells(p: Placement) -> tuple[str, str, str, str, str, str, list[str]]:
    """job, priority, speedup, runtime, deadline, met, and one line per allocation ("not admitted" without any)."""
    return (
        p.job,
        p.priority,
        f"{p.speedup:.3f}" if p.admitted else "-",
        f"{p.runtime_hours:.2f}" if p.runtime_hours is not None else "-",
        f"{p.deadline_hours:g}" if p.deadline_hours is not None else "-",
        {True: "yes", False: "NO", None: "-"}[p.meets_deadline],
        [f"{a.device} {a.count}x{a.cap_w:g}W" for a in p.allocations] or ["not admitted"],
    )


def _watts(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def print_replan_summary(result: Replan, console: Console) -> None:
    """The re-plan's headline and one row per job it touches (jobs waiting before and after are left out)."""
    plan = result.plan
    objective = "-" if plan.objective is None else f"{plan.objective:,.4g}"
    net = "-" if result.net_objective is None else f"{result.net_objective:,.4g}"
    console.print(
        f"[bold]{escape(plan.workload)}[/]: {plan.status.value}, {plan.objective_name} = {objective}, "
        f"net of moves {net}; moved {result.moved} running job(s), {result.restart_hours:g} restart hours "
        f"({result.move_cost_hours:g} h each); solved in {result.solve_seconds:.2f} s",
        highlight=False,
    )
    rows = [c for c in result.changes if c.before or c.after]
    if not rows:
        return
    table = Table("job", "change", "reason", "before (count x cap W)", "after", "restart h", "why")
    for c in rows:
        table.add_row(
            escape(c.job) + (" (pinned)" if c.pinned else ""),
            c.kind.value,
            c.reason.value,
            escape(", ".join(f"{a.device} {a.count}x{a.cap_w:g}W" for a in c.before)) or "-",
            escape(", ".join(f"{a.device} {a.count}x{a.cap_w:g}W" for a in c.after)) or "-",
            f"{c.restart_hours:g}",
            escape(c.detail),
        )
    console.print(table)
