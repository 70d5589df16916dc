"""Large-workload benchmark: first plan, final gap and time-limit overrun per size, on each instance family.

    python -m bench.large                                   # the default set
    python -m bench.large --runs racks:2K:60:2,plain:XL:60:1 --out /tmp/x.md
    python -m bench.large --undecomposed racks:2K:60:1      # also the same instance without decomposition
    python -m bench.large --parts racks:2K:60:1             # also the same instance by parts (columns off)
    python -m bench.large --strategy columns --runs racks:10K:60:1   # a strategy forced (default: auto, by size)
    python -m bench.large --rounds --runs racks:2K:90:1     # also each column generation round's LP and bound
    python -m bench.large --threads 1,2 --runs racks:10K:60:1  # pricing threads side by side
    python -m bench.large --shrink 0,1 --runs racks3:5K:60:1   # the integer master without and with shrunk columns
    python -m bench.large --hosts 0,24 --runs mixed:2K:60:1    # pricing with every host, then with 24 per job

A run is FAMILY:SIZE:TIME_LIMIT_S:SEEDS. Families: `plain` (optsched.testing.instances.generate: S, M, L, XL),
`racks` (generate_racks: per-rack budgets, a quarter hard jobs; M, L, 2K, 5K, 10K, 20K) and `racks3` (the
same devices in three times the groups: 4-10 devices a group, so jobs often need several) and `mixed`
(`generate_mixed`: every catalog model in groups of 2-6 devices, each group's speed and power binned apart, per-rack
and fleet budgets, jobs from 1 to 2,000 hours and 1 to 64 devices). Every plan,
optsched's interim ones included, goes through the verifier. The workload is passed as a JSON dict, so the
times include validation. Baselines run on the same instances (the slow ones only up to `--baseline-max-jobs`).
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import logging
import math
import os
import platform
import random
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

import optsched
from bench.rq_fleet import Fleet
from optsched.baselines import BASELINES
from optsched.infra.rq.pricing import RQPricing
from optsched.schema.catalog import device_catalog
from optsched.solve.columns.fanout import set_pricing_fan_out
from optsched.solve.options import STRATEGY_NAMES, StrategyName
from optsched.testing.instances import RACK_SIZES, SIZES, generate, generate_racks
from optsched.verify.placement import verify

DEFAULT_RUNS = (
    "plain:M:10:3,plain:L:30:2,plain:XL:60:1,"
    "racks:M:10:3,racks:L:30:2,racks:2K:60:2,racks:5K:60:1,racks:10K:60:1,racks:20K:60:1"
)
FAST_BASELINES = ("deadline_greedy",)
THREADS = optsched.SolveOptions().pricing_threads
HOSTS = optsched.SolveOptions().pricing_hosts


@dataclass
class Result:
    family: str
    size: str
    seed: int
    limit: float
    wall: float
    first_plan_s: float | None
    status: str
    objective: float | None
    bound: float | None
    gap: float | None
    incumbents: int
    violations: int
    method: str
    baselines: dict[str, tuple[str, float]] = field(default_factory=dict)
    undecomposed: tuple[str, float | None, float | None, float] | None = None
    by_parts: tuple[str, float | None, float | None, float] | None = None
    rounds: list[tuple[float, float, float]] = field(default_factory=list)  # (s since the call, LP, bound)
    threads: int = THREADS
    shrink: bool = True  # SolveOptions.shrink_columns
    hosts: int = HOSTS  # SolveOptions.pricing_hosts

    @property
    def setting(self) -> str:
        """The pricing threads, the shrunk columns when they are off, the hosts priced when not the default's."""
        return (
            f"{self.threads}" + ("" if self.shrink else ", shrink off")
            + ("" if self.hosts == HOSTS else f", hosts {self.hosts or 'all'}")
        )

    @property
    def label(self) -> str:
        """The run's row name: family-size-seed-t{threads}, -noshrink when the shrunk columns are off, -h{hosts}
        when the hosts priced are not the default's."""
        return (
            f"{self.family}-{self.size}-{self.seed}-t{self.threads}" + ("" if self.shrink else "-noshrink")
            + ("" if self.hosts == HOSTS else f"-h{self.hosts}")
        )


class RoundLog(logging.Handler):
    """Collects column generation's rounds from its debug log: (seconds since `start`, LP value, bound)."""

    PATTERN = re.compile(r"column generation round \d+: LP ([-\d.e+]+), bound ([-\d.e+inf]+)")

    def __init__(self, start: float):
        super().__init__(logging.DEBUG)
        self.start = start
        self.rounds: list[tuple[float, float, float]] = []

    def emit(self, record: logging.LogRecord) -> None:
        found = self.PATTERN.match(record.getMessage())
        if found:
            self.rounds.append((time.monotonic() - self.start, float(found[1]), float(found[2])))


# Jobs and device groups of the `mixed` family per size (the rack sizes' jobs, four times their groups).
MIXED_SIZES = {size: (jobs, 4 * groups) for size, (jobs, groups) in RACK_SIZES.items()}
MIXED_GROUPS_PER_RACK = 8


def generate_mixed(size: str, seed: int) -> optsched.Workload:
    """A fleet of many device types with few devices each and jobs of very different sizes: group g is a
    catalog model (cycled) with 2-6 devices whose speeds are scaled by one bin factor (0.7-1.3) and whose caps by
    another (0.8-1.2), so speed per watt varies within a model too; racks of 8 groups each have a budget
    (60-85 % of their peak) under a fleet budget (55-75 %). Jobs: work log-uniform over 1-2,000 h, max_devices
    1-64 (log-uniform), parallel fraction 0.5-0.999, a deadline on 40 % of them (1-4 x the work over 4 reference
    devices), weights 1-4."""
    n_jobs, n_groups = MIXED_SIZES[size]
    rng = random.Random(f"mixed-{size}-{seed}")
    catalog = device_catalog()
    models = sorted(catalog)
    devices = []
    for g in range(n_groups):
        model = models[g % len(models)]
        speed_bin, power_bin = rng.uniform(0.7, 1.3), rng.uniform(0.8, 1.2)
        entry = catalog[model]
        devices.append({
            "id": f"m{g:04d}-{model.lower()}",
            "model": model,
            "count": rng.randint(2, 6),
            "domain": f"rack{g // MIXED_GROUPS_PER_RACK:03d}",
            "idle_w": round(entry["idle_w"] * power_bin, 1),
            "power_levels": [
                {"cap_w": round(lv["cap_w"] * power_bin, 1), "speed": round(lv["speed"] * speed_bin, 4)}
                for lv in entry["power_levels"]
            ],
        })
    jobs = []
    for j in range(n_jobs):
        work = round(math.exp(rng.uniform(0.0, math.log(2000.0))), 2)
        job: dict = {
            "id": f"job-{j:05d}",
            "work_hours": work,
            "parallel_fraction": round(rng.uniform(0.5, 0.999), 3),
            "max_devices": max(1, round(math.exp(rng.uniform(0.0, math.log(64.0))))),
            "weight": float(rng.randint(1, 4)),
        }
        if rng.random() < 0.4:
            job["deadline_hours"] = round(work / 4.0 * rng.uniform(1.0, 4.0), 2)
        jobs.append(job)
    peak: dict[str, float] = {}
    for d in devices:
        peak[d["domain"]] = peak.get(d["domain"], 0.0) + d["count"] * max(lv["cap_w"] for lv in d["power_levels"])
    return optsched.Workload.load({
        "name": f"mixed-{size}-seed{seed}",
        "devices": devices,
        "jobs": jobs,
        "power": {
            "budget_w": round(sum(peak.values()) * rng.uniform(0.55, 0.75)),
            "domains": {rack: round(p * rng.uniform(0.6, 0.85)) for rack, p in peak.items()},
        },
    })


def instance(family: str, size: str, seed: int) -> dict:
    if family == "mixed":
        return generate_mixed(size, seed).model_dump(mode="json", exclude_unset=True)
    if family == "racks3":
        workload = generate_racks(size, seed, group_factor=3)
    else:
        workload = generate_racks(size, seed) if family == "racks" else generate(size, seed)
    return workload.model_dump(mode="json", exclude_unset=True)


def method(plan: optsched.Plan) -> str:
    if "column_rounds" in plan.timings:
        return f"columns ({plan.timings['column_rounds']:.0f} rounds)"
    if "parts" in plan.timings:
        return f"parts ({plan.timings['parts']:.0f})"
    return "one MILP"


def again(
    document: dict, limit: float, workload, result: Result, options: optsched.SolveOptions
) -> tuple[str, float | None, float | None, float]:
    """The same instance solved with other options (another strategy)."""
    t = time.monotonic()
    plan = optsched.plan(document, time_limit_s=limit, options=options)
    result.violations += len(verify(workload, plan))
    return plan.status.value, plan.objective, plan.bound, time.monotonic() - t


def run(
    family: str, size: str, seed: int, limit: float, baseline_max_jobs: int, undecomposed: bool, by_parts: bool = False,
    strategy: StrategyName = "auto", rounds: bool = False, threads: int = THREADS, shrink: bool = True,
    hosts: int = HOSTS,
) -> Result:
    document = instance(family, size, seed)
    seen: list[tuple[float, optsched.Plan]] = []
    start = time.monotonic()
    logger = logging.getLogger("optsched.solve.columns.generation")
    handler, level = RoundLog(start), logger.level
    if rounds:
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
    try:
        plan = optsched.plan(
            document, time_limit_s=limit, on_incumbent=lambda p: seen.append((time.monotonic() - start, p)),
            options=optsched.SolveOptions(
                strategy=strategy, pricing_threads=threads, shrink_columns=shrink, pricing_hosts=hosts
            ),
        )
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    wall = time.monotonic() - start
    workload = optsched.Workload.load(document)
    violations = len(verify(workload, plan)) + sum(len(verify(workload, p)) for _, p in seen)
    result = Result(
        family, size, seed, limit, wall, seen[0][0] if seen else None, plan.status.value, plan.objective, plan.bound,
        plan.gap, len(seen), violations, method(plan), rounds=handler.rounds, threads=threads, shrink=shrink,
        hosts=hosts,
    )
    for name, baseline in BASELINES.items():
        if name not in FAST_BASELINES and len(workload.jobs) > baseline_max_jobs:
            continue
        b = baseline(workload)
        result.baselines[name] = (b.status.value, b.weighted_speedup if b.status.value != "infeasible" else 0.0)
        result.violations += len(verify(workload, b))
    if undecomposed:
        result.undecomposed = again(document, limit, workload, result, optsched.SolveOptions(direct_max_options=10**12))
    if by_parts:
        # Split as by default, but by parts where columns would be used.
        result.by_parts = again(document, limit, workload, result, optsched.SolveOptions(column_max_options=0))
    return result


def spread(values, fmt: str) -> str:
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    if len(values) == 1:
        return format(values[0], fmt)
    return f"{format(statistics.median(values), fmt)} (worst {format(max(values), fmt)})"


def worst_low(values, fmt: str) -> str:
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    if len(values) == 1:
        return format(values[0], fmt)
    return f"{format(statistics.median(values), fmt)} (worst {format(min(values), fmt)})"


def shape(family: str, size: str) -> str:
    if family == "mixed":
        return f"{MIXED_SIZES[size][0]:,} x {MIXED_SIZES[size][1]}"
    if family in ("racks", "racks3"):
        jobs, groups = RACK_SIZES[size]
        return f"{jobs:,} x {groups * (3 if family == 'racks3' else 1)}"
    jobs, groups, levels = SIZES[size]
    return f"{jobs:,} x {groups}"


def table(results: list[Result]) -> list[str]:
    keys = list(dict.fromkeys((r.family, r.size, r.setting) for r in results))
    names = list(dict.fromkeys(n for r in results for n in r.baselines))
    lines = [
        "| family | size (jobs x groups) | threads | seeds | limit s | first plan s | wall s | wall / limit | "
        "final gap | statuses | method | " + " | ".join(f"{n} / optsched" for n in names) + " | violations |",
        "|---|---|---|---|---|---|---|---|---|---|---|" + "---|" * len(names) + "---|",
    ]
    for family, size, setting in keys:
        rs = [r for r in results if (r.family, r.size, r.setting) == (family, size, setting)]
        ratios = []
        for n in names:
            vals = [r.baselines[n][1] / r.objective for r in rs if n in r.baselines and r.objective]
            ratios.append(worst_low(vals, ".3f") if vals else "-")
        lines.append(
            f"| {family} | {shape(family, size)} | {setting} | {len(rs)} | {rs[0].limit:g} | "
            f"{spread([r.first_plan_s for r in rs], '.2f')} | {spread([r.wall for r in rs], '.1f')} | "
            f"{spread([r.wall / r.limit for r in rs], '.3f')} | {spread([r.gap for r in rs], '.4f')} | "
            f"{', '.join(r.status for r in rs)} | {', '.join(r.method for r in rs)} | "
            + " | ".join(ratios) + f" | {sum(r.violations for r in rs)} |"
        )
    return lines


def details(results: list[Result]) -> list[str]:
    lines = [
        "| instance | status | objective | bound | gap | first plan s | wall s | incumbents | baselines (status, "
        "weighted speedup) | one MILP (status, objective, bound, s) | by parts (status, objective, bound, s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def other(run) -> str:
        if not run:
            return "-"
        s, o, b, t = run
        return f"{s}, {o if o is None else format(o, ',.1f')}, {b if b is None else format(b, ',.1f')}, {t:.1f}"

    for r in results:
        base = "; ".join(f"{n} {s} {v:,.1f}" for n, (s, v) in r.baselines.items())
        lines.append(
            f"| {r.label} | {r.status} | {r.objective or 0:,.1f} | "
            f"{'-' if r.bound is None else format(r.bound, ',.1f')} | {'-' if r.gap is None else format(r.gap, '.4f')} "
            f"| {'-' if r.first_plan_s is None else format(r.first_plan_s, '.2f')} | {r.wall:.1f} | {r.incumbents} | "
            f"{base} | {other(r.undecomposed)} | {other(r.by_parts)} |"
        )
    return lines


def round_details(results: list[Result]) -> list[str]:
    """Per run: rounds, median seconds per round, the LP at rounds 5, 10 and the last, the bound at 10 and last."""
    lines = [
        "| instance | rounds | first round s | s per round (median) | LP at round 5 / 10 / last | "
        "rounds' bound at round 10 / last |",
        "|---|---:|---:|---:|---:|---:|",
    ]

    def at(rs, i: int, k: int) -> str:
        return format(rs[i - 1][k], ",.0f") if len(rs) >= i else "-"

    for r in results:
        rs = r.rounds
        if not rs:
            continue
        per = statistics.median(b[0] - a[0] for a, b in zip(rs, rs[1:], strict=False)) if len(rs) > 1 else math.nan
        lines.append(
            f"| {r.label} | {len(rs)} | {rs[0][0]:.1f} | {per:.2f} | "
            f"{at(rs, 5, 1)} / {at(rs, 10, 1)} / {rs[-1][1]:,.0f} | {at(rs, 10, 2)} / {rs[-1][2]:,.0f} |"
        )
    return lines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default=DEFAULT_RUNS)
    parser.add_argument("--undecomposed", default="", help="runs (same syntax) also solved without decomposition")
    parser.add_argument("--parts", default="", help="runs (same syntax) also solved by parts, columns off")
    parser.add_argument("--baseline-max-jobs", type=int, default=2000)
    parser.add_argument("--strategy", default="auto", choices=STRATEGY_NAMES, help="SolveOptions.strategy")
    parser.add_argument("--rounds", action="store_true", help="also report column generation's rounds")
    parser.add_argument("--threads", default=str(THREADS),
                        help="SolveOptions.pricing_threads, or several (1,2): each run once per count, side by side")
    parser.add_argument("--shrink", default="1",
                        help="SolveOptions.shrink_columns (1 on, 0 off), or both (0,1): each run once per value")
    parser.add_argument("--hosts", default=str(HOSTS),
                        help="SolveOptions.pricing_hosts (0: every host), or several (0,8): each run once per value")
    parser.add_argument("--fan-out", type=int, default=0,
                        help="column generation's pricing rounds also on N `optsched worker` processes (RQ)")
    parser.add_argument("--out", default="bench/results/planner-large.md")
    args = parser.parse_args(argv)
    fleet = None
    if args.fan_out:
        fleet = Fleet(args.fan_out, Path(tempfile.mkdtemp()) / "store.sqlite")
        set_pricing_fan_out(RQPricing(fleet.keys))
    try:
        _main(args)
    finally:
        if fleet is not None:
            set_pricing_fan_out(None)
            fleet.close()


def _main(args: argparse.Namespace) -> None:
    undecomposed = {tuple(spec.split(":")[:2]) for spec in args.undecomposed.split(",") if spec}
    by_parts = {tuple(spec.split(":")[:2]) for spec in args.parts.split(",") if spec}
    results: list[Result] = []
    loads = [os.getloadavg()[0]]
    started = time.monotonic()
    threads_each = [int(t) for t in args.threads.split(",")]
    shrinks = [bool(int(v)) for v in args.shrink.split(",")]
    hosts_each = [int(v) for v in args.hosts.split(",")]
    for spec in args.runs.split(","):
        family, size, limit, seeds = spec.split(":")
        for seed, threads, shrink, hosts in itertools.product(range(int(seeds)), threads_each, shrinks, hosts_each):
            r = run(
                family, size, seed, float(limit), args.baseline_max_jobs, (family, size) in undecomposed,
                (family, size) in by_parts, args.strategy, args.rounds, threads, shrink, hosts,
            )
            results.append(r)
            loads.append(os.getloadavg()[0])
            print(f"{family} {size} seed {seed} ({r.setting}): {r.status} {r.objective or 0:,.1f} bound {r.bound} "
                  f"gap {r.gap} first {r.first_plan_s} wall {r.wall:.1f}/{r.limit:g} {r.method} "
                  f"baselines {r.baselines} one MILP {r.undecomposed} by parts {r.by_parts} violations {r.violations}",
                  flush=True)
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), platform.processor())
    lines = [
        "# Large-workload benchmark",
        "",
        f"Produced by `python -m bench.large {' '.join(sys.argv[1:])}` on {datetime.date.today()} ({os.cpu_count()} "
        f"cores, {cpu}, shared with other jobs: 1-minute load average {min(loads):.1f}-{max(loads):.1f} while it ran, "
        f"{time.monotonic() - started:.0f} s in all); Python {platform.python_version()}, highspy "
        f"{version('highspy')}. Planner at its defaults (mip_gap {optsched.Options().mip_gap}), the time limit per run "
        "as listed. The workload goes in as a JSON dict, so every time includes validation.",
        "",
        "Median over seeds, worst in brackets (worst = largest for times, ratios and gaps; smallest for baseline "
        "ratios). `first plan s`: seconds from the call to the first verified plan handed to `on_incumbent`. "
        "`final gap`: (bound - objective) / objective, the bound being the MILP's (one MILP) or the "
        "Lagrangian bound at the column master's duals with the per-job bound refined (columns; "
        "optsched.solve.columns). `method`: how the plan was made. `X / optsched`: the baseline's weighted "
        "speedup over optsched's (0 when the baseline finds no feasible plan). `one MILP` and `by parts`: the same "
        "instance with the same limit, decomposition off, or columns off (the parts of optsched.solve.decompose). "
        "`threads`: SolveOptions.pricing_threads, the threads pricing and bounding column generation's rounds "
        "(\"shrink off\": SolveOptions.shrink_columns off, the integer master without the LP's fractional columns "
        "with fewer devices; \"hosts\": SolveOptions.pricing_hosts when not the default, all = every frontier "
        "level).",
        "",
        *table(results),
        "",
        "## Every run",
        "",
        *details(results),
        "",
        *(["## Column generation's rounds", "", *round_details(results), ""] if args.rounds else []),
    ]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
