"""The `optsched` command: a thin view over the same Python API the REST service uses."""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from optsched.cli_tables import print_plan_table, print_replan_summary
from optsched.schema.errors import InvalidWorkload
from optsched.slurm_cli import app as slurm_app

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Power- and deadline-aware placement of jobs on heterogeneous accelerators.",
)
stderr = Console(stderr=True)
app.add_typer(slurm_app, name="slurm")

EXIT_PLAN, EXIT_NO_PLAN, EXIT_INVALID = 0, 1, 2


@app.callback()
def main() -> None:
    """optsched: plan placements with a MILP (Pyomo + HiGHS)."""
    from optsched.service.settings import ConfigError, apply_solver_log, load_settings

    try:
        apply_solver_log(load_settings())
    except ConfigError:
        pass  # the commands that need the settings report them; the solver's log just stays off


@app.command("plan")
def plan_command(
    workload: Annotated[Path, typer.Argument(help="Workload JSON file ('-' reads standard input).")],
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Write the plan JSON here.")] = None,
    time_limit: Annotated[float | None, typer.Option("--time-limit", min=0.001, help="Seconds.")] = None,
    gap: Annotated[float | None, typer.Option("--gap", min=0.0, max=1.0, help="Relative MIP gap.")] = None,
    table: Annotated[bool, typer.Option("--table", help="Print a readable table instead of JSON.")] = False,
) -> None:
    """Plan WORKLOAD; exit 0 for a plan, 1 for infeasible/no_solution, 2 for invalid input."""
    from optsched.explain.planning import plan

    source = sys.stdin.read() if str(workload) == "-" else workload
    with _live_progress() as progress:
        result = _valid_or_exit(plan, source, time_limit_s=time_limit, mip_gap=gap, progress=progress)
    _emit_json(result, output, echo=not table)
    if table:
        print_plan_table(result, Console(width=None if sys.stdout.isatty() else 160))
    for reason in result.diagnosis:
        stderr.print("[bold red]infeasible:[/]", escape(reason), highlight=False)
    for change in result.suggestions:
        stderr.print("[bold yellow]would make it feasible:[/]", escape(change.message), highlight=False)
    for warning in result.warnings:
        stderr.print("[yellow]warning:[/]", escape(warning), highlight=False)
    raise typer.Exit(EXIT_PLAN if result.feasible else EXIT_NO_PLAN)


@app.command("replan")
def replan_command(
    workload: Annotated[Path, typer.Argument(help="Workload JSON file the current plan was made for.")],
    plan: Annotated[Path, typer.Argument(help="Current plan JSON file (as `optsched plan -o` writes it).")],
    change: Annotated[
        Path, typer.Argument(help="Change JSON file: failures, repairs, budgets, jobs added/removed, pins.")
    ],
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Write the new plan JSON here.")] = None,
    workload_out: Annotated[
        Path | None, typer.Option("--workload-out", help="Write the changed workload JSON here (to re-plan again).")
    ] = None,
    result_out: Annotated[
        Path | None, typer.Option("--result", help="Write the whole re-plan JSON here (plan, changes, workload).")
    ] = None,
    move_cost_hours: Annotated[
        float | None, typer.Option("--move-cost-hours", min=0.0, max=1000.0, help="Hours a moved job loses.")
    ] = None,
    time_limit: Annotated[float | None, typer.Option("--time-limit", min=0.001, help="Seconds.")] = None,
    gap: Annotated[float | None, typer.Option("--gap", min=0.0, max=1.0, help="Relative MIP gap.")] = None,
) -> None:
    """Re-plan after CHANGE, keeping running jobs where it pays; exit 0 for a plan, 1 for infeasible/no_solution,
    2 for invalid input. The new plan goes to -o (else stdout), the change summary to stderr."""
    from optsched.replan import InvalidChange, replan
    from optsched.schema.errors import InvalidPlan

    try:
        result = replan(workload, plan, change, move_cost_hours=move_cost_hours, time_limit_s=time_limit, mip_gap=gap)
    except (InvalidWorkload, InvalidPlan) as exc:
        what = "change" if isinstance(exc, InvalidChange) else "plan" if isinstance(exc, InvalidPlan) else "workload"
        stderr.print(f"[bold red]invalid {what}[/] ({len(exc.errors)} problem(s)):", highlight=False)
        for error in exc.errors:
            stderr.print(f"  {error}", highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(EXIT_INVALID) from exc
    try:
        _emit_json(result.plan, output)
        if workload_out is not None:
            _write_atomically(workload_out, result.workload.model_dump_json(indent=2, exclude_defaults=True) + "\n")
        if result_out is not None:
            _emit_json(result, result_out)
    except OSError as exc:
        stderr.print(f"[bold red]cannot write:[/] {escape(str(exc))}", highlight=False)
        raise typer.Exit(EXIT_INVALID) from exc
    print_replan_summary(result, Console(stderr=True, width=None if sys.stderr.isatty() else 160))
    for reason in result.plan.diagnosis:
        stderr.print("[bold red]infeasible:[/]", escape(reason), highlight=False)
    for suggestion in result.plan.suggestions:
        stderr.print("[bold yellow]would make it feasible:[/]", escape(suggestion.message), highlight=False)
    for warning in result.plan.warnings:
        stderr.print("[yellow]warning:[/]", escape(warning), highlight=False)
    raise typer.Exit(EXIT_PLAN if result.feasible else EXIT_NO_PLAN)


@app.command("frontier")
def frontier_command(
    workload: Annotated[Path, typer.Argument(help="Workload JSON file.")],
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Write the frontier JSON here.")] = None,
    png: Annotated[Path | None, typer.Option("--png", help="Write the plot here.")] = None,
    time_limit: Annotated[float | None, typer.Option("--time-limit", min=0.001, help="Seconds per point.")] = None,
    gap: Annotated[float | None, typer.Option("--gap", min=0.0, max=1.0, help="Relative MIP gap per point.")] = None,
) -> None:
    """The power-speedup frontier of WORKLOAD: exit 0 with a curve, 1 when there is none, 2 for invalid input."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from optsched.explain.frontier import frontier, plot_frontier

    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    # On a terminal only (piped: nothing extra), and until the last file is written.
    with Progress(*columns, console=stderr, transient=True, disable=not stderr.is_terminal,
                  redirect_stdout=False) as bar:
        task = bar.add_task("planning the frontier: a solve per budget, from the least feasible to saturation")
        result = _valid_or_exit(frontier, workload, time_limit_s=time_limit, mip_gap=gap)
        bar.update(task, description=f"writing the frontier ({len(result.points)} points)")
        if output is not None:
            _emit_json(result, output)
        if png is not None and result.points:
            plot_frontier(result, png)
    if output is None:
        _emit_json(result, None)  # stdout once the live line is gone
    if result.reason:
        stderr.print("[bold red]no frontier:[/]", escape(result.reason), highlight=False)
    raise typer.Exit(EXIT_PLAN if result.points else EXIT_NO_PLAN)


@app.command("queueing")
def queueing_command(
    study: Annotated[Path, typer.Argument(help="Queueing study JSON file ('-' reads standard input).")],
    method: Annotated[str, typer.Option("--method", help="analytic or simulation.")] = "analytic",
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Write the result JSON here.")] = None,
    png: Annotated[Path | None, typer.Option("--png", help="Write the power-response front plot here.")] = None,
    seed: Annotated[int, typer.Option("--seed", min=0, help="Simulation seed.")] = 0,
    replications: Annotated[int, typer.Option("--replications", min=2, help="Simulation replications.")] = 10,
    jobs: Annotated[
        int, typer.Option("--jobs", min=100, help="Least simulated arrivals per replication (doubled to +-5 %).")
    ] = 10_000,
) -> None:
    """Power vs response time of STUDY's priority classes: exit 0 when stable and every target is met, 1 when
    unstable or no caps meet the targets, 2 for invalid input."""
    from optsched.charts import queueing_front_png
    from optsched.queueing import analyze

    source = sys.stdin.read() if str(study) == "-" else study
    try:
        result = analyze(source, method=method, seed=seed, replications=replications, jobs_per_replication=jobs)
    except InvalidWorkload as exc:
        stderr.print(f"[bold red]invalid study[/] ({len(exc.errors)} problem(s)):", highlight=False)
        for error in exc.errors:
            stderr.print(f"  {error}", highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(EXIT_INVALID) from exc
    try:
        _emit_json(result, output)
        if png is not None and result.stable:
            png.write_bytes(queueing_front_png(result))
    except OSError as exc:
        stderr.print(f"[bold red]cannot write:[/] {escape(str(exc))}", highlight=False)
        raise typer.Exit(EXIT_INVALID) from exc
    if result.reason:
        stderr.print(f"[bold red]{result.status.value}:[/]", escape(result.reason), highlight=False, soft_wrap=True)
    raise typer.Exit(EXIT_PLAN if result.ok else EXIT_NO_PLAN)


@app.command("serve")
def serve_command(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")] = 8080,
    workers: Annotated[
        int | None, typer.Option(min=1, help="Solver processes (default: OPTSCHED_WORKERS, else one per core).")
    ] = None,
    threads: Annotated[int, typer.Option(min=1, help="Application threads of the HTTP process (waitress).")] = 32,
) -> None:
    """Run the REST service under waitress; configuration by OPTSCHED_* environment variables (see the README,
    REST service)."""
    from api.serve import serve
    from optsched.service.settings import ConfigError

    try:
        serve(host=host, port=port, workers=workers, threads=threads)
    except ConfigError as exc:
        stderr.print("[bold red]invalid configuration:[/]", str(exc), highlight=False)
        raise typer.Exit(EXIT_INVALID) from exc


@app.command("night")
def night_command(
    queue: Annotated[Path, typer.Argument(
        help="Night queue JSON file (a workload with release_hours, after, power.windows, failures).")],
    start: Annotated[str, typer.Option("--start", help="When the night starts, ISO 8601 (e.g. 2026-12-01T22:00).")],
    hours: Annotated[float, typer.Option("--hours", help="Length of the night in hours.")],
    out: Annotated[Path, typer.Option("--out", help="Output directory (replaced as a whole, atomically).")],
    preempt: Annotated[
        bool, typer.Option("--preempt", help="Let due jobs displace lower-priority running jobs.")
    ] = False,
    restart_hours: Annotated[float, typer.Option(
        "--restart-hours", help="Restart cost in hours of jobs whose queue sets none (preemption, move, failure).")
    ] = 0.1,
    time_limit: Annotated[
        float | None, typer.Option("--time-limit", min=0.001, help="Seconds per event's solve.")
    ] = None,
    bound_time_limit: Annotated[
        float, typer.Option("--bound-time-limit", min=0.0, max=3_600.0,
                            help="Seconds for the gap to the time-indexed lower bound (0: not computed).")
    ] = 10.0,
    budget: Annotated[
        float | None, typer.Option("--budget", min=0.001, max=86_400.0,
                                   help="Seconds for the planning, the bound included "
                                        "(default: 20 up to 150 jobs, else 120).")
    ] = None,
) -> None:
    """Plan the night's queue as a timeline; exit 0 if every hard deadline is met, 1 if not, 2 for invalid input."""
    import time

    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from optsched.night import plan_night
    from optsched.service.outputs import write_night_outputs

    started = time.monotonic()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("jobs done, at +{task.fields[t]:.2f} h"), TimeElapsedColumn())
    try:
        # On a terminal only (piped: nothing extra), and until the last file is written.
        with Progress(*columns, console=stderr, transient=True, disable=not stderr.is_terminal,
                      redirect_stdout=False) as bar:
            task = bar.add_task("planning the night", total=None, t=0.0)

            def progress(p) -> None:
                bar.update(task, total=p.jobs_total, completed=p.jobs_finished, t=p.t_hours)

            result = plan_night(queue, start=start, hours=hours, preempt=preempt, restart_hours=restart_hours,
                                time_limit_s=time_limit, progress=progress, bound_time_limit_s=bound_time_limit,
                                budget_s=budget)
            bar.update(task, description=f"writing {escape(str(out))}/ (timeline, segments, summary, charts)",
                       total=result.summary.jobs, completed=len(result.summary.finished_jobs_by_end_of_night),
                       t=result.summary.makespan_hours)
            write_night_outputs(result, out)
    except InvalidWorkload as exc:
        _print_invalid(exc)
        raise typer.Exit(EXIT_INVALID) from exc
    except OSError as exc:
        stderr.print(f"[bold red]cannot write {out}:[/] {exc}", highlight=False)
        raise typer.Exit(EXIT_INVALID) from exc
    s = result.summary
    typer.echo(
        f"{result.queue}: {s.status.value} - {s.jobs} jobs, {s.finished_by_end_of_night} finished by the end of "
        f"the night, makespan {s.makespan_hours:.2f} h, hard deadlines met {s.hard_deadlines_met}, missed "
        f"{len(s.hard_deadlines_missed)}, "
        f"energy {s.energy_kwh:.1f} kWh; planned in {time.monotonic() - started:.1f} s; wrote {out}/"
    )
    if s.bound is not None:
        typer.echo(_bound_line(s.bound))
    for job in result.jobs:
        if job.reason is not None:
            stderr.print(f"[yellow]{job.priority} job {escape(repr(job.job))}:[/] {escape(job.reason)}",
                         highlight=False)
    for warning in result.warnings:
        stderr.print("[yellow]warning:[/]", escape(warning), highlight=False)
    if result.budget_cut:
        stderr.print(f"[yellow]the planning budget stopped or left unrun:[/] {escape(', '.join(result.budget_cut))} "
                     "(--budget gives it more time)", highlight=False)
    raise typer.Exit(EXIT_PLAN if result.ok else EXIT_NO_PLAN)



def _bound_line(b) -> str:
    """One line on the night's gaps to the time-indexed lower bound (optsched.night.bound)."""
    if b.weighted_completion_gap is None and b.energy_gap is None:
        return f"bound: {b.status.value} ({b.reason})"
    parts = []
    if b.weighted_completion_gap is not None:
        parts.append(f"weighted completion {100 * b.weighted_completion_gap:.1f} % above its bound "
                     f"{b.weighted_completion_bound_hours:.2f} h")
    if b.energy_gap is not None:
        parts.append(f"energy {100 * b.energy_gap:.1f} % above its bound {b.energy_bound_kwh:.1f} kWh")
    if b.fairness_gap is not None:  # fairness objectives only (optsched.night.fair_bound)
        parts.append(f"fairness by morning {100 * b.fairness_gap:.1f} % below its bound {b.fairness_bound:.3f}")
        if b.max_rho_gap is not None:
            parts.append(f"largest rho {100 * b.max_rho_gap:.1f} % above its bound {b.max_rho_bound:.3f}")
    note = f" ({b.reason})" if b.reason else ""
    return f"gap to the time-indexed bound: {', '.join(parts)}{note}"


# -- scaled deployment (README: Scaled deployment): RQ workers and batch fan-out ------------------------------------


@app.command("worker")
def worker_command(
    concurrency: Annotated[
        int | None, typer.Option("--concurrency", "-c", min=1, help="RQ worker processes (default: one per core).")
    ] = None,
    burst: Annotated[bool, typer.Option("--burst", help="Exit once the queue is empty.")] = False,
    spool_dir: Annotated[Path, typer.Option(
        "--spool-dir", envvar="OPTSCHED_SPOOL_DIR",
        help="Where answers the database did not take are kept until it does (replayed at the next start too).",
    )] = Path("var/spool"),
    result_retry_s: Annotated[float, typer.Option(
        "--result-retry-s", envvar="OPTSCHED_RESULT_RETRY_S", min=0.0, max=50.0,
        help="Seconds a finished solve retries writing its answer while the database does not answer, before "
        "spooling it.",
    )] = 30.0,
    pricing_fan_out: Annotated[bool, typer.Option(
        "--pricing-fan-out/--no-pricing-fan-out", envvar="OPTSCHED_PRICING_FAN_OUT",
        help="Large solves (column generation) hand their pricing rounds to idle workers of the queue.",
    )] = True,
) -> None:
    """Solve on RQ workers: take solves from OPTSCHED_QUEUE_URL, write results to OPTSCHED_DATABASE_URL."""
    import logging
    import os

    from optsched.infra.rq import configure, open_store, redacted, run_workers
    from optsched.service.kinds import RUNNER
    from optsched.service.settings import ConfigError, load_settings

    try:
        settings = load_settings()
    except ConfigError as exc:
        stderr.print("[bold red]invalid configuration:[/]", str(exc), highlight=False)
        raise typer.Exit(EXIT_INVALID) from exc
    if not settings["QUEUE_URL"]:
        stderr.print("[bold red]OPTSCHED_QUEUE_URL is not set:[/] set it to the Redis URL the API submits to "
                     "(redis://host:6379/0)", highlight=False)
        raise typer.Exit(EXIT_INVALID)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s [%(process)d] %(levelname)s %(name)s: %(message)s")
    ctx = configure(open_store(settings["DATABASE_URL"]), settings["QUEUE_URL"], runner=RUNNER,
                    queue_name=settings["QUEUE_NAME"], grace_s=settings["SOLVE_GRACE_S"], lease_s=settings["LEASE_S"],
                    solver_threads=settings["SOLVER_THREADS"], spool_dir=spool_dir, result_retry_s=result_retry_s,
                    result_ttl_s=settings["RESULT_TTL_S"] or None, pricing_fan_out=pricing_fan_out)
    n = concurrency or os.cpu_count() or 1
    stderr.print(f"optsched worker: {n} process(es) on queue {settings['QUEUE_NAME']!r} at "
                 f"{redacted(settings['QUEUE_URL'])}", highlight=False)
    run_workers(ctx, n, burst=burst)


@app.command("batch")
def batch_command(
    paths: Annotated[list[str], typer.Argument(help="Workload files, directories (their *.json) or glob patterns.")],
    out: Annotated[Path, typer.Option("--out", help="Directory for the plans and batch-summary.json.")],
    wait: Annotated[bool, typer.Option("--wait", help="Wait for every solve (always, without a queue URL).")] = False,
    workers: Annotated[
        int | None, typer.Option("--workers", min=1, help="Local solver processes, without a queue URL.")
    ] = None,
    timeout: Annotated[float | None, typer.Option("--timeout", min=0.0, help="Stop waiting after S seconds.")] = None,
) -> None:
    """Plan many workloads: exit 0 when every one has a feasible plan, 1 otherwise (or unfinished), 2 for invalid
    input."""

    from redis.exceptions import RedisError
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from sqlalchemy.exc import OperationalError

    from optsched.service.batch import InvalidBatch, open_backend, read_inputs, run_batch
    from optsched.service.settings import ConfigError, given_in_environment, load_settings

    unreachable = (RedisError, OperationalError)

    try:
        settings = load_settings()
        inputs = read_inputs(paths)
        database_url = settings["DATABASE_URL"] if "DATABASE_URL" in given_in_environment() else None
        backend = open_backend(out, queue_url=settings["QUEUE_URL"], queue_name=settings["QUEUE_NAME"],
                               database_url=database_url, workers=workers,
                               grace_s=settings["SOLVE_GRACE_S"], solver_threads=settings["SOLVER_THREADS"])
    except InvalidBatch as exc:
        stderr.print(f"[bold red]invalid batch[/] ({len(exc.problems)} problem(s)); nothing was submitted:",
                     highlight=False)
        for problem in exc.problems:
            stderr.print(f"  {problem}", highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(EXIT_INVALID) from exc
    except ConfigError as exc:
        stderr.print("[bold red]invalid configuration:[/]", str(exc), highlight=False)
        raise typer.Exit(EXIT_INVALID) from exc
    except unreachable as exc:
        stderr.print("[bold red]cannot reach the store or the queue:[/]", escape(str(exc)), highlight=False)
        raise typer.Exit(EXIT_INVALID) from exc
    wait = wait or backend.local
    if wait and not backend.local and backend.queue.worker_count() == 0:
        stderr.print(f"[yellow]warning:[/] no `optsched worker` listens on {backend.label}; the plans wait for one",
                     highlight=False)
    columns = (TextColumn("solving"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[detail]}"),
               TimeElapsedColumn())
    try:
        with Progress(*columns, console=stderr, transient=True) as bar:
            task = bar.add_task("batch", total=len(inputs), detail="")

            def progress(finished: int, total: int, counts) -> None:
                detail = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
                bar.update(task, completed=finished, detail=detail)

            result = run_batch(inputs, out, store=backend.store, queue=backend.queue, wait=wait, timeout_s=timeout,
                               progress=progress, queue_label=backend.label)
    except unreachable as exc:
        stderr.print("[bold red]lost the store or the queue:[/] " + escape(str(exc)) + "; run the batch again to "
                     "collect what was submitted", highlight=False)
        raise typer.Exit(EXIT_NO_PLAN) from exc
    except OSError as exc:
        stderr.print(f"[bold red]cannot write {out}:[/] {exc}", highlight=False)
        raise typer.Exit(EXIT_INVALID) from exc
    finally:
        backend.close()
    counts = ", ".join(f"{n} {status}" for status, n in sorted(result.counts.items()))
    typer.echo(f"{len(result.entries)} workloads ({counts}); submitted {result.submitted}, reused "
               f"{len(result.entries) - result.submitted}; {result.wall_seconds:.1f} s; wrote {result.summary_path}")
    for entry in result.entries:
        if entry.error:
            stderr.print(f"[yellow]{escape(entry.workload)}:[/] {escape(entry.error)}", highlight=False)
    if not wait:
        raise typer.Exit(EXIT_PLAN)
    raise typer.Exit(EXIT_PLAN if result.complete and result.all_feasible else EXIT_NO_PLAN)

@contextmanager
def _live_progress():
    """On a terminal, a live line on stderr while the planner works (elapsed, incumbent, bound, gap); the
    `progress` callback to pass to optsched.plan. Piped or redirected: no callback and nothing printed."""
    if not stderr.is_terminal:
        yield None
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), TextColumn("planning"), TimeElapsedColumn(), TextColumn("{task.description}"))
    with Progress(*columns, console=stderr, transient=True) as bar:
        task = bar.add_task("looking for a first plan")

        def progress(seconds: float, incumbent: float | None, bound: float | None) -> None:
            parts = [f"at {seconds:.1f} s"]
            if incumbent is not None:
                parts.append(f"incumbent {incumbent:,.6g}")
            if bound is not None:
                parts.append(f"bound {bound:,.6g}")
            if incumbent is not None and bound is not None:
                parts.append(f"gap {abs(bound - incumbent) / max(abs(incumbent), 1e-9):.2%}")
            bar.update(task, description=", ".join(parts))

        yield progress


def _valid_or_exit(run, *args, **kwargs):
    """Call the Python API; invalid input ends the command with every problem on stderr and exit code 2."""
    try:
        return run(*args, **kwargs)
    except InvalidWorkload as exc:
        _print_invalid(exc)
        raise typer.Exit(EXIT_INVALID) from exc


def _emit_json(result, output: Path | None, echo: bool = True) -> None:
    """The result as JSON: written atomically to `output`, else on stdout (unless `echo` is off)."""
    document = json.dumps(result.model_dump(mode="json"), indent=2)
    if output is not None:
        _write_atomically(output, document + "\n")
    elif echo:
        typer.echo(document)


def _print_invalid(exc: InvalidWorkload) -> None:
    stderr.print(f"[bold red]invalid workload[/] ({len(exc.errors)} problem(s)):", highlight=False)
    for error in exc.errors:
        stderr.print(f"  {error}", highlight=False, markup=False)


def _write_atomically(path: Path, text: str) -> None:
    """Write beside the target and rename, so a reader never sees half a plan."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
