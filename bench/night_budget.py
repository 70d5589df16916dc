"""The night planner's budget (plan_night's budget_s) side by side: each queue planned under each budget in one run,
the time, the candidate kept, what the budget cut, and the night's measures against the largest budget's.

    python -m bench.night_budget           # 100-job queues of the second generator, budgets 20 s and 600 s
    python -m bench.night_budget --jobs 60 --budgets 10,20,600 --out /tmp/budget.md

The queues are bench/night_queues_other.py's five families at --jobs jobs, seeds 0 and 1 (its suite has 120 jobs,
where no MILP candidate runs and the budget does not bind). Every timeline is checked with the timeline verifier;
results go to bench/results/night-budget.md.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from bench.night_queues_other import OTHER_FAMILIES, OTHER_HOURS, generate_other
from optsched.night import plan_night
from optsched.verify.timeline import verify_timeline

START = "2026-12-01T22:00"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100, help="jobs per queue")
    parser.add_argument("--budgets", default="20,600", help="budgets in seconds, comma-separated; the last: reference")
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--out", type=Path, default=Path("bench/results/night-budget.md"))
    args = parser.parse_args(argv)
    budgets = [float(b) for b in args.budgets.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]
    load_before = os.getloadavg()
    rows: list[str] = []
    seconds: dict[float, list[float]] = {b: [] for b in budgets}
    ratios: dict[float, list[float]] = {b: [] for b in budgets}
    cut_queues: dict[float, int] = {}
    violations = 0
    for family in OTHER_FAMILIES:
        for seed in seeds:
            queue = generate_other(seed, family, jobs=args.jobs)
            plans = {}
            for budget in budgets:
                started = time.perf_counter()
                plan = plan_night(queue, start=START, hours=OTHER_HOURS, budget_s=budget)
                seconds[budget].append(time.perf_counter() - started)
                violations += len(verify_timeline(queue, plan))
                plans[budget] = plan
            reference = plans[budgets[-1]].summary
            for budget in budgets:
                plan, s = plans[budget], plans[budget].summary
                ratio = (s.weighted_mean_completion_hours or 0) / (reference.weighted_mean_completion_hours or 1)
                ratios[budget].append(ratio)
                if plan.budget_cut:
                    cut_queues[budget] = cut_queues.get(budget, 0) + 1
                rows.append(
                    f"| {family}-{seed} | {budget:g} | {seconds[budget][-1]:.1f} | {plan.chosen} |"
                    f" {', '.join(plan.budget_cut) or '-'} | {len(s.hard_deadlines_missed)} |"
                    f" {len(s.soft_deadlines_missed)} | {s.weighted_mean_completion_hours:.3f} ({ratio:.3f}) |"
                    f" {s.makespan_hours:.2f} | {s.energy_kwh:.1f} |"
                )
            print(rows[-1], file=sys.stderr, flush=True)
    lines = [
        "# Night planner budget (bench/night_budget.py)",
        "",
        f"- date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
        f"- machine: {os.cpu_count()} cores, {platform.system()}, Python {platform.python_version()}; load average"
        f" {load_before[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end",
        f"- command: `.venv/bin/python -m bench.night_budget --jobs {args.jobs} --budgets {args.budgets} --seeds"
        f" {args.seeds}`",
        f"- queues: bench/night_queues_other.py, {args.jobs} jobs, families {', '.join(OTHER_FAMILIES)}, seeds"
        f" {args.seeds}; seconds include the summary's bound (its own limit, 10 s); wmct ratio: weighted mean"
        f" completion over the {budgets[-1]:g}-s budget's",
        f"- timeline verifier violations, every plan: {violations}",
        "",
        "| queue | budget s | planner s | chosen | cut by the budget | hard missed | soft missed | weighted mean"
        " completion h (ratio) | makespan h | energy kWh |",
        "|---|---:|---:|---|---|---:|---:|---|---:|---:|",
        *rows,
        "",
        "## Summary",
        "",
        *(
            f"- budget {b:g} s: planner seconds median {statistics.median(seconds[b]):.1f}, worst"
            f" {max(seconds[b]):.1f}; budget cut something on {cut_queues.get(b, 0)} of {len(seconds[b])} queues;"
            f" weighted completion / the {budgets[-1]:g}-s budget's: median {statistics.median(ratios[b]):.3f},"
            f" worst {max(ratios[b]):.3f}"
            for b in budgets
        ),
        "",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines))
    print("\n".join(lines[-len(budgets) - 1:]))
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
