"""`optsched slurm import|apply|night|watch`: the Slurm adapter (optsched.adapters.slurm) as commands.

Exit codes as the other commands: 0 done, 1 done but not everything could be placed (a night that misses a
hard deadline, an infeasible plan), 2 invalid input or Slurm refused (nothing was changed then)."""

from __future__ import annotations

import json
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from optsched.adapters.slurm.apply import ApplyReport, apply_plan
from optsched.adapters.slurm.loop import WatchState, plan_for_slurm, run_night, watch_once
from optsched.adapters.slurm.reader import import_cluster
from optsched.adapters.slurm.runner import SlurmError, SlurmInputError, SlurmRunner
from optsched.adapters.slurm.site import Site
from optsched.schema.errors import InvalidPlan, InvalidWorkload
from optsched.schema.plan import Plan
from optsched.schema.workload import Workload

app = typer.Typer(no_args_is_help=True, help="Slurm in and out: import held jobs, apply plans, the night, watch nodes.")
stderr = Console(stderr=True, highlight=False, soft_wrap=True)
EXIT_OK, EXIT_PARTIAL, EXIT_INVALID = 0, 1, 2
SiteOption = Annotated[Path, typer.Option("--site", help="Site file: GRES types, power domains, budgets, priorities.")]
StateOption = Annotated[Path, typer.Option("--state", help="Folder for the applied plan and the decisions log.")]


def _fail(err: Exception) -> typer.Exit:
    if isinstance(err, SlurmInputError):
        lines = [
            f"cannot use what Slurm reports ({len(err.problems)} problem(s)); nothing was changed:",
            *(f"  {p}" for p in err.problems),
        ]
    elif isinstance(err, (InvalidWorkload, InvalidPlan)):
        lines = [str(err)]
    else:
        lines = [f"slurm: {err}"]
    for line in lines:
        stderr.print(line, markup=False)
    return typer.Exit(EXIT_INVALID)


def _print_report(report: ApplyReport) -> None:
    if report.dry_run:
        for line in report.lines():
            typer.echo(line)
    for a in report.actions:
        stderr.print(f"job {a.job}: {a.outcome.value}: {a.detail}", markup=False)


def _night_start(text: str) -> datetime:
    """HH:MM: the next such time (today, else tomorrow), local; or an ISO 8601 timestamp."""
    now = datetime.now().astimezone()
    try:
        hour, minute = (int(x) for x in text.split(":"))
        start = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
        return start if start >= now - timedelta(minutes=1) else start + timedelta(days=1)
    except ValueError:
        parsed = datetime.fromisoformat(text)
        return parsed if parsed.tzinfo else parsed.astimezone()


@app.command("import")
def import_command(
    site: SiteOption,
    output: Annotated[Path, typer.Option("-o", "--output", help="Write the workload (or night queue) JSON here.")],
    night: Annotated[bool, typer.Option("--night", help="A night queue (releases, dependencies).")] = False,
    start: Annotated[str, typer.Option("--start", help="With --night: when it starts, HH:MM or ISO 8601.")] = "22:00",
) -> None:
    """The live cluster's nodes and held jobs as a workload file; jobs left out are listed with their reason."""
    try:
        result = import_cluster(Site.load(site), SlurmRunner(), night_start=_night_start(start) if night else None)
    except (SlurmError, InvalidWorkload, ValueError) as err:
        raise _fail(err) from None
    output.write_text(result.workload.model_dump_json(indent=2, exclude_defaults=True) + "\n", encoding="utf-8")
    for s in (*result.unavailable, *result.skipped):
        stderr.print(f"left out: {s.reason}", markup=False)
    typer.echo(f"{len(result.workload.jobs)} jobs on {len(result.workload.devices)} nodes -> {output}")


@app.command("plan")
def plan_command(
    workload: Annotated[Path, typer.Argument(help="The workload `optsched slurm import` wrote.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Write the plan JSON here.")],
    time_limit: Annotated[float, typer.Option("--time-limit", min=0.001, help="Seconds.")] = 10.0,
) -> None:
    """optsched plan with each job on one node (what a Slurm job can be given), verified."""
    try:
        result = plan_for_slurm(Workload.load(workload), time_limit_s=time_limit)
    except (SlurmError, InvalidWorkload, ValueError) as err:
        raise _fail(err) from None
    output.write_text(result.model_dump_json(indent=2) + "\n", encoding="utf-8")
    typer.echo(
        f"{result.status.value}: {sum(p.admitted for p in result.placements)} of {len(result.placements)} "
        f"jobs placed -> {output}"
    )
    raise typer.Exit(EXIT_OK if result.feasible else EXIT_PARTIAL)


@app.command("apply")
def apply_command(
    workload: Annotated[Path, typer.Argument(help="The workload `optsched slurm import` wrote.")],
    plan: Annotated[Path, typer.Argument(help="Its plan (`optsched plan -o`).")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the exact commands, run none.")] = False,
    state: Annotated[Path | None, typer.Option("--state", help="Record the applied plan here (for watch).")] = None,
) -> None:
    """Carry the plan out: each placed job updated (nodes, GPU type and count, cap) and released, in plan order."""
    try:
        w, p = Workload.load(workload), Plan.model_validate_json(plan.read_text("utf-8"))
        report = apply_plan(w, p, SlurmRunner(), dry_run=dry_run)
    except (SlurmError, InvalidWorkload, InvalidPlan, OSError, ValueError) as err:
        raise _fail(err) from None
    _print_report(report)
    if state is not None and not dry_run:
        WatchState(state).save(w, p)
    raise typer.Exit(EXIT_OK if p.feasible else EXIT_PARTIAL)


@app.command("night")
def night_command(
    site: SiteOption,
    start: Annotated[str, typer.Option("--start", help="When the night starts: HH:MM (the next one) or ISO 8601.")],
    hours: Annotated[float, typer.Option("--hours", min=0.01, help="Length of the night in hours.")],
    out: Annotated[Path, typer.Option("--out", help="Folder for the night's files (timeline, summary, charts).")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the exact commands, run none.")] = False,
) -> None:
    """Import the held jobs, plan the night, apply it: begin times and releases in the planned order."""
    from optsched.service.outputs import write_night_outputs

    try:
        run = run_night(Site.load(site), SlurmRunner(), start=_night_start(start), hours=hours, dry_run=dry_run)
        write_night_outputs(run.plan, out)
        (out / "slurm-import.json").write_text(run.imported.workload.model_dump_json(indent=2, exclude_defaults=True))
    except (SlurmError, InvalidWorkload, InvalidPlan, OSError, ValueError) as err:
        raise _fail(err) from None
    for s in (*run.imported.unavailable, *run.imported.skipped):
        stderr.print(f"left out: {s.reason}", markup=False)
    _print_report(run.report)
    seconds = ", ".join(f"{k} {v:.2f} s" for k, v in run.seconds.items())
    typer.echo(
        f"night from {run.plan.start.isoformat(timespec='minutes')}: {len(run.plan.jobs)} jobs, "
        f"{run.plan.status.value}; {seconds}; wrote {out}/"
    )
    raise typer.Exit(EXIT_OK if run.plan.ok else EXIT_PARTIAL)


@app.command("watch")
def watch_command(
    site: SiteOption,
    state: StateOption = Path("optsched-slurm-state"),
    once: Annotated[bool, typer.Option("--once", help="Poll once and exit.")] = False,
    interval: Annotated[float, typer.Option("--interval", min=1.0, help="Seconds between polls.")] = 30.0,
) -> None:
    """Poll the nodes; when one of the applied plan goes DOWN or DRAIN, re-plan with the fewest moves and apply.
    Each decision is printed and appended to STATE/decisions.jsonl."""
    loaded, watched = Site.load(site), WatchState(state)
    while True:
        try:
            decision = watch_once(loaded, SlurmRunner(), watched)
        except (SlurmError, InvalidWorkload, InvalidPlan, ValueError) as err:
            if once:
                raise _fail(err) from None
            stderr.print(f"watch: {err}", markup=False)
        else:
            if decision.kind != "none":
                typer.echo(json.dumps(decision.record), file=sys.stdout)
        if once:
            raise typer.Exit(EXIT_OK)
        time.sleep(interval)
