"""Night planner benchmark: plan_night against FIFO, EDF and EASY backfilling on 24 seeded queues
(bench/night_queues.py) and on the sample queue, with lower bounds, per queue and as geometric means.

    python -m bench.night                              # the whole suite: 12 small, 8 medium, 4 large queues
    python -m bench.night --sizes small --out /tmp/night.md

Every timeline is checked with the timeline verifier; results go to bench/results/night.md. The acceptance
criteria of issue 13 are evaluated per queue against the best baseline *per metric* (the lowest hard misses,
makespan, weighted mean completion and energy among FIFO, EDF and EASY, each on its own).
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import statistics
import sys
import time
from importlib.metadata import version
from pathlib import Path

from bench.night_queues import HOURS, SUITE, generate, lower_bounds
from optsched.baselines import easy, edf, fifo
from optsched.night import NightPlan, plan_night
from optsched.schema.catalog import sample_workload_path
from optsched.verify.timeline import verify_timeline

START = "2026-12-01T22:00"
BASELINES = {"fifo": fifo, "edf": edf, "easy": easy}


def run(fn, queue, hours: float) -> tuple[NightPlan, float, int]:
    started = time.perf_counter()
    plan = fn(queue, start=START, hours=hours)
    seconds = time.perf_counter() - started
    return plan, seconds, len(verify_timeline(queue, plan))


def metrics(plan: NightPlan) -> dict[str, float]:
    s = plan.summary
    return {
        "hard": len(s.hard_deadlines_missed) + len(s.never_ran),
        "soft": len(s.soft_deadlines_missed),
        "wmct": s.weighted_mean_completion_hours or math.inf,
        "makespan": s.makespan_hours,
        "energy": s.energy_kwh,
        "by_night": s.finished_by_end_of_night,
    }


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="small,medium,large", help="comma-separated sizes to run")
    parser.add_argument("--out", type=Path, default=Path("bench/results/night.md"))
    args = parser.parse_args(argv)
    sizes = args.sizes.split(",")
    load_before = os.getloadavg()

    rows, results = [], []
    for size, seed in SUITE:
        if size not in sizes:
            continue
        queue = generate(seed, size)
        hours = HOURS[size]
        lb_makespan, lb_wmct = lower_bounds(queue)
        planner, seconds, violations = run(plan_night, queue, hours)
        base = {name: run(fn, queue, hours) for name, fn in BASELINES.items()}
        violations += sum(v for _, _, v in base.values())
        m = metrics(planner)
        b = {name: metrics(plan) for name, (plan, _, _) in base.items()}
        best = {key: min(x[key] for x in b.values()) for key in ("hard", "soft", "wmct", "makespan", "energy")}
        ok = {
            "hard": m["hard"] <= best["hard"],
            "makespan": m["makespan"] <= 1.05 * best["makespan"] + 1e-9,
            "wmct": m["wmct"] <= best["wmct"] + 1e-9,
            "energy": m["energy"] <= 1.05 * best["energy"] + 1e-9,
        }
        results.append((size, seed, queue, m, b, best, ok, seconds, violations, lb_makespan, lb_wmct, planner))
        sys.stderr.write(
            f"{size}-{seed}: planner {m} in {seconds:.1f} s ({planner.chosen}); best baseline {best}; {ok}\n"
        )
        rows.append(
            "| "
            + " | ".join(
                [
                    f"{size}-{seed}",
                    f"{len(queue['jobs'])} / {sum(d['count'] for d in queue['devices'])} / {len(queue['devices'])}",
                    f"{seconds:.1f}",
                    planner.chosen or "-",
                    f"{m['hard']} / {best['hard']} ({b['easy']['hard']})",
                    f"{m['soft']} / {best['soft']}",
                    f"{m['wmct']:.2f} / {best['wmct']:.2f} ({m['wmct'] / best['wmct']:.3f}; LB "
                    f"{m['wmct'] / lb_wmct:.2f})",
                    f"{m['makespan']:.2f} / {best['makespan']:.2f} ({m['makespan'] / best['makespan']:.3f}; LB "
                    f"{m['makespan'] / lb_makespan:.2f})",
                    f"{m['energy']:.0f} / {best['energy']:.0f} ({m['energy'] / best['energy']:.3f})",
                    "".join("y" if ok[k] else "N" for k in ("hard", "makespan", "wmct", "energy")),
                    f"{violations}",
                ]
            )
            + " |"
        )

    soft_total = sum(r[3]["soft"] for r in results)
    soft_baselines = {name: sum(r[4][name]["soft"] for r in results) for name in BASELINES}
    hard_total = sum(r[3]["hard"] for r in results)
    hard_baselines = {name: sum(r[4][name]["hard"] for r in results) for name in BASELINES}
    held = {k: sum(1 for r in results if r[6][k]) for k in ("hard", "makespan", "wmct", "energy")}
    all_ok = sum(1 for r in results if all(r[6].values()))
    gm = {
        "wmct_best": geomean([r[3]["wmct"] / r[5]["wmct"] for r in results]),
        "makespan_best": geomean([r[3]["makespan"] / r[5]["makespan"] for r in results]),
        "energy_best": geomean([r[3]["energy"] / r[5]["energy"] for r in results]),
        "wmct_lb": geomean([r[3]["wmct"] / r[10] for r in results]),
        "makespan_lb": geomean([r[3]["makespan"] / r[9] for r in results]),
    }
    gm_base = {
        name: (
            geomean([r[4][name]["wmct"] / r[10] for r in results]),
            geomean([r[4][name]["makespan"] / r[9] for r in results]),
            geomean([r[4][name]["energy"] / r[5]["energy"] for r in results]),
        )
        for name in BASELINES
    }
    times = {size: [r[7] for r in results if r[0] == size] for size in sizes}
    chosen: dict[str, int] = {}
    for r in results:
        chosen[r[11].chosen] = chosen.get(r[11].chosen, 0) + 1

    sample, sample_rows = str(sample_workload_path("night-queue")), []
    for name, fn in {"planner": plan_night, **BASELINES}.items():
        plan, seconds, v = run(fn, sample, 8.0)
        m = metrics(plan)
        sample_rows.append(
            f"| {name}{' (' + plan.chosen + ')' if plan.chosen else ''} | {seconds:.2f} | {m['hard']} | {m['soft']} | "
            f"{m['wmct']:.3f} | {m['makespan']:.2f} | {m['by_night']}/{plan.summary.jobs} | {m['energy']:.1f} | {v} |"
        )

    cores = os.cpu_count()
    lines = [
        "# Night planner benchmark (bench/night.py)",
        "",
        f"- date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
        (
            f"- machine: {cores} cores, {platform.system()}, Python {platform.python_version()}, highspy"
            f" {version('highspy')}; load average at the start {load_before[0]:.1f} (shared with other engineers'"
            f" jobs while it ran, at the end {os.getloadavg()[0]:.1f}): expect timing noise"
        ),
        f"- command: `.venv/bin/python -m bench.night --sizes {args.sizes}`",
        (
            "- queues: `bench/night_queues.py`, seeds as listed (small: 30-60 jobs, 24-48 devices, 8 h; medium: 120"
            " jobs, 56-80 devices, 8 h; large: 500 jobs, 160-224 devices, 10 h; 3-5 catalog device types, budgets"
            " 60-85 % of peak, domain budgets, windows, releases, `after` chains, hard and soft deadlines)"
        ),
        (
            "- planner: `plan_night` at its defaults (candidates: `milp` and `milp-classic` up to 100 jobs,"
            " `dispatch-efficient` up to 150, four `dispatch-*` orders always; the best timeline by hard misses,"
            " never run, weighted completion, soft misses, makespan, energy is kept; `chosen` says which)"
        ),
        "- best = the best baseline per metric (FIFO, EDF, EASY, each metric on its own); LB = lower bound",
        "",
        "| queue | jobs / devices / types | planner s | chosen | hard missed: planner / best (EASY) | soft missed: "
        "planner / best | weighted mean completion h: planner / best (ratio; ratio to LB) | makespan h: planner / "
        "best (ratio; to LB) | energy kWh: planner / best (ratio) | criteria hard, makespan, wmct, energy | verifier "
        "violations (all 4 timelines) |",
        "|---|---|---:|---|---|---|---|---|---|---|---:|",
        *rows,
        "",
        "## Summary",
        "",
        f"- queues: {len(results)}; every criterion held on {all_ok} of {len(results)}",
        f"- hard misses <= best baseline's: {held['hard']} queues; makespan <= 1.05 x best: {held['makespan']};"
        f" weighted mean completion <= best: {held['wmct']}; energy <= 1.05 x best: {held['energy']}",
        f"- hard misses (incl. never run) in total: planner {hard_total}, "
        + ", ".join(f"{k} {v}" for k, v in hard_baselines.items()),
        f"- soft misses in total: planner {soft_total}, " + ", ".join(f"{k} {v}" for k, v in soft_baselines.items()),
        (
            f"- geometric means, planner: weighted completion {gm['wmct_best']:.3f} x best baseline "
            f"({gm['wmct_lb']:.2f} x LB), makespan {gm['makespan_best']:.3f} x best ({gm['makespan_lb']:.2f} x LB), "
            f"energy {gm['energy_best']:.3f} x best"
        ),
        *(
            f"- geometric means, {name}: weighted completion {w:.2f} x LB, makespan {mk:.2f} x LB, "
            f"energy {e:.3f} x best"
            for name, (w, mk, e) in gm_base.items()
        ),
        *(
            f"- planning time, {size}: median {statistics.median(t):.1f} s, max {max(t):.1f} s"
            for size, t in times.items()
            if t
        ),
        "- chosen candidates: " + ", ".join(f"{k} {v}" for k, v in sorted(chosen.items())),
        f"- verifier violations over every timeline: {sum(r[8] for r in results)}",
        "",
        "## Sample queue (`models/workloads/night-queue.json`, 8 h)",
        "",
        "| policy | s | hard missed | soft missed | weighted mean completion h | makespan h | finished by 06:00 | "
        "energy kWh | verifier violations |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        *sample_rows,
        "",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines), encoding="utf-8")
    sys.stdout.write("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
