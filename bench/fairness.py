"""Fairness benchmark: the price of fairness per objective, and optsched beside Gavel's max-min fairness LP.

    .venv/bin/python -m bench.fairness [--seeds 1] [--queues 3] [--time-limit 30]

Writes bench/results/fairness.md (docs/benchmarks/fairness.md quotes it). Three parts:

1. The M workload (optsched.testing.instances.generate, bench.planner's generator), restricted to the jobs its
   weighted_speedup plan admits (the fairness objectives admit every job, and M holds more than fit at once), its
   jobs in three teams by parallel fraction (comm p < 0.9, mid, parallel p >= 0.97: the issue's teams of
   communication-bound and embarrassingly parallel jobs). Per objective: status, minimum normalised speedup
   min_j S_j / S_j^solo, Jain's index over the normalised speedups, the worst team's normalised sum / share, and
   the total weighted speedup (its loss against weighted_speedup is the price of fairness).
2. The night queues (bench.night_queues, small), as a snapshot of their jobs the same way (night-only fields
   dropped), and planned over the night by plan_night under each objective (and night_fairness).
3. Gavel's own throughputs (/work/shared/data/device_measurements.md: K80, P100, V100 steps/s of six models), one
   device per job, p = 1: Gavel's max-min fairness LP re-derived from its paper (OSDI 2020, section 4.1) beside
   optsched's max_min_speedup.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import highspy
import numpy as np

import optsched
from bench.night_queues import generate as night_queue
from optsched.night.fairness import night_fairness, progress_by_morning
from optsched.schema.night import NightQueue
from optsched.schema.tolerances import FAIRNESS_TOLERANCE
from optsched.schema.workload import Workload
from optsched.testing.instances import generate
from optsched.verify.timeline import verify_timeline

OBJECTIVES = ("weighted_speedup", "max_min_speedup", "team_max_min")
NIGHT_ONLY = ("release_hours", "after", "checkpoint_hours", "restart_hours", "elastic")

# Gavel's scheduler/simulation_throughputs.json, single-GPU steps/s (device_measurements.md, "Gavel" section).
GAVEL = {
    "ResNet-50": {"K80": 0.62, "P100": 2.62, "V100": 4.39},
    "Transformer": {"K80": 1.75, "P100": 5.09, "V100": 8.62},
    "LM": {"K80": 17.1, "P100": 58.2, "V100": 64.7},
    "CycleGAN": {"K80": 0.51, "P100": 2.40, "V100": 4.43},
    "A3C": {"K80": 3.44, "P100": 5.68, "V100": 7.18},
    "Recommendation": {"K80": 10.4, "P100": 16.6, "V100": 7.47},
}
GAVEL_FLEET = {"K80": 4, "P100": 4, "V100": 4}


@dataclass
class Row:
    case: str
    objective: str
    status: str
    seconds: float
    min_normalised: float
    jain: float
    worst_team: float
    weighted_speedup: float
    violations: int
    bound: float | None = None  # the fairness objectives' proven bound on their value
    fairness: float | None = None  # the plan's own value (its own S^solo)
    unproven_solo: int = 0  # solo problems not proven in time (their jobs' normalised speedups read high)


def jain(values: list[float]) -> float:
    """Jain's index (sum x)^2 / (n sum x^2): 1 when all are equal, 1/n when one job has everything."""
    square = sum(v * v for v in values)
    return sum(values) ** 2 / (len(values) * square) if square > 0 else 0.0


def with_teams(workload: Workload, keep: set[str]) -> Workload:
    """The jobs in `keep`, each in a team by its parallel fraction."""
    def team(p: float) -> str:
        return "comm" if p < 0.9 else ("mid" if p < 0.97 else "parallel")

    jobs = tuple(j.model_copy(update={"team": team(j.parallel_fraction)}) for j in workload.jobs if j.id in keep)
    return Workload.load({**workload.model_dump(mode="json", exclude={"jobs"}), "jobs": [
        j.model_dump(mode="json", exclude_none=True) for j in jobs]})


def snapshot(document: dict[str, Any]) -> Workload:
    """A night queue's jobs as one core workload (all released at once, no chains, no windows)."""
    jobs = [{k: v for k, v in j.items() if k not in NIGHT_ONLY} for j in document["jobs"]]
    power = {k: v for k, v in document["power"].items() if k != "windows"}
    return Workload.load({**{k: document[k] for k in ("name", "devices", "options")}, "jobs": jobs, "power": power})


def compare(case: str, workload: Workload, time_limit: float) -> list[Row]:
    """Each objective on the jobs the weighted_speedup plan admits, normalised by the max-min plan's S^solo."""
    first = optsched.plan(workload, time_limit_s=time_limit)
    base = with_teams(workload, {p.job for p in first.placements if p.admitted})
    plans: dict[str, tuple[optsched.Plan, float]] = {}
    for name in OBJECTIVES:
        w = base.model_copy(update={"objective": name})
        started = time.monotonic()
        plans[name] = (optsched.plan(w, time_limit_s=time_limit), time.monotonic() - started)
    solo = {p.job: p.solo_speedup for p in plans["max_min_speedup"][0].placements}
    shares = base.team_shares()
    rows = []
    for name, (plan, seconds) in plans.items():
        x = {p.job: p.speedup / (solo[p.job] or 1.0) for p in plan.placements}
        teams: dict[str, float] = {}
        for job in base.jobs:
            teams[job.team_name] = teams.get(job.team_name, 0.0) + x[job.id]
        violations = len(optsched.verify(base.model_copy(update={"objective": name}), plan))
        rows.append(Row(
            case, name, plan.status.value, seconds, min(x.values()), jain(list(x.values())),
            min(v / shares[t] for t, v in teams.items()), plan.weighted_speedup, violations,
            plan.bound if plan.fairness is not None else None, plan.fairness,
            sum(1 for w in plan.warnings if "solo speedup" in w),
        ))
        print(f"{case} {name}: {plan.status.value} in {seconds:.1f} s, min {rows[-1].min_normalised:.3f}, "
              f"Jain {rows[-1].jain:.3f}, weighted {plan.weighted_speedup:.1f}", flush=True)
    return rows


def equal_allocation(counts: np.ndarray, n: int) -> np.ndarray:
    """Gavel's X^equal: every job 1/n of every type's time, scaled so that a job's fractions sum to at most 1."""
    equal = np.tile(counts / n, (n, 1))
    return equal / np.maximum(1.0, equal.sum(axis=1, keepdims=True))


NIGHT_OBJECTIVES = (
    ("weighted_speedup", "progress"), ("max_min_speedup", "progress"), ("team_max_min", "progress"),
    ("max_min_speedup", "finish_time"),
)


def night_runs(seed: int) -> tuple[list[str], list[str]]:
    """The night planner's timelines of a small queue, its jobs in the teams of `with_teams`, under each night
    objective: (one row per objective, one row per team and objective). Fairness by morning on x_j, the share of
    job j's work done by the end of the night: min_j x_j, Jain over x_j, min over teams of their x sum / share;
    finish-time fairness rho; weighted mean completion (the price)."""
    document = night_queue(seed, "small")
    for j in document["jobs"]:
        p = j["parallel_fraction"]
        j["team"] = "comm" if p < 0.9 else ("mid" if p < 0.97 else "parallel")
    rows, teams = [], []
    for objective, fairness in NIGHT_OBJECTIVES:
        queue = {**document, "objective": objective, "night_fairness": fairness}
        started = time.monotonic()
        plan = optsched.plan_night(queue, start=datetime.datetime(2026, 12, 1, 22), hours=8)
        seconds = time.monotonic() - started
        problems = len(verify_timeline(queue, plan))
        x = progress_by_morning(plan.jobs, plan.hours)
        by_team = night_fairness(NightQueue.load({**queue, "objective": "team_max_min"}), plan.jobs, plan.hours)
        name = objective if objective == "weighted_speedup" else f"{objective} / {fairness}"
        rho = "-" if plan.summary.max_rho is None else f"{plan.summary.max_rho:.2f}"
        wmct = plan.summary.weighted_mean_completion_hours
        # The event MILP's own timeline (the `milp` candidate alone): what its fairness weights do.
        milp = optsched.plan_night(queue, start=datetime.datetime(2026, 12, 1, 22), hours=8, candidates=("milp",))
        problems += len(verify_timeline(queue, milp))
        mx = progress_by_morning(milp.jobs, milp.hours)
        m_team = night_fairness(NightQueue.load({**queue, "objective": "team_max_min"}), milp.jobs, milp.hours)
        m_rho = "-" if milp.summary.max_rho is None else f"{milp.summary.max_rho:.2f}"
        m_wmct = milp.summary.weighted_mean_completion_hours
        b = plan.summary.bound
        fair_b = "-" if b is None or b.fairness_bound is None else (
            f"{b.fairness_bound:.3f}" + ("" if b.fairness_gap is None else f" ({b.fairness_gap:.0%})"))
        rho_b = "-" if b is None or b.max_rho_bound is None else (
            f"{b.max_rho_bound:.2f}" + ("" if b.max_rho_gap is None else f" ({b.max_rho_gap:.0%})"))
        value = "-" if plan.summary.fairness is None else f"{plan.summary.fairness:.3f}"
        rows.append(
            f"| small-{seed} | {name} | {plan.chosen} | {seconds:.1f} | {min(x.values()):.3f} | "
            f"{jain(list(x.values())):.3f} | {by_team:.2f} | {rho} | "
            + ("-" if wmct is None else f"{wmct:.2f}") + f" | {len(plan.summary.never_ran)} | "
            f"{min(mx.values()):.3f} | {m_team:.2f} | {m_rho} | " + ("-" if m_wmct is None else f"{m_wmct:.2f}")
            + f" | {value} | {fair_b} | {rho_b} | {problems} |"
        )
        print(f"night small-{seed} {name}: {plan.chosen} in {seconds:.1f} s, min x {min(x.values()):.3f}, "
              f"team {by_team:.2f}, max rho {rho}", flush=True)
        teams += [
            f"| small-{seed} | {name} | {t.team} | {t.jobs} | {t.share:.0%} | {t.device_hours:.1f} | "
            f"{t.device_hours_share:.0%} | " + ("-" if t.worst_rho is None else f"{t.worst_rho:.2f}")
            + f" | {t.never_ran} |"
            for t in plan.summary.teams
        ]
    return rows, teams


def gavel_lp(throughput: np.ndarray, counts: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, float]:
    """Gavel's max-min fairness (OSDI 2020, section 4.1, one worker per job): maximise
    min_j throughput(j, X) / (w_j throughput(j, X^equal)) over time fractions X[j, k] >= 0 with sum_k X[j, k] <= 1
    (a job runs on one type at a time) and sum_j X[j, k] <= count_k; X^equal gives every job 1/n of every type's
    time, scaled so that sum_k X^equal[j, k] <= 1. Returns (X, the max-min value)."""
    n, k = throughput.shape
    base = (throughput * equal_allocation(counts, n)).sum(axis=1) * weights
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    inf = highspy.kHighsInf
    columns = n * k + 1  # X row by row, then t
    h.addVars(columns, np.zeros(columns), np.full(columns, inf))
    h.changeColCost(n * k, 1.0)
    h.changeObjectiveSense(highspy.ObjSense.kMaximize)
    for j in range(n):
        idx = np.arange(j * k, (j + 1) * k, dtype=np.int32)
        h.addRow(-inf, 1.0, k, idx, np.ones(k))
        # t * base_j - sum_k T[j, k] X[j, k] <= 0
        h.addRow(-inf, 0.0, k + 1, np.append(idx, n * k).astype(np.int32), np.append(-throughput[j], base[j]))
    for c in range(k):
        idx = np.arange(c, n * k, k, dtype=np.int32)
        h.addRow(-inf, float(counts[c]), n, idx, np.ones(n))
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        raise RuntimeError(f"Gavel's LP: {h.getModelStatus()}")
    values = np.array(h.getSolution().col_value)
    return values[: n * k].reshape(n, k), float(values[-1])


def gavel_case(copies: int) -> list[str]:
    """Gavel's LP and optsched's max_min_speedup on `copies` jobs of each of Gavel's six models."""
    types = list(GAVEL_FLEET)
    names = [f"{m}-{i}" for m in GAVEL for i in range(copies)]
    throughput = np.array([[GAVEL[n.rsplit("-", 1)[0]][t] for t in types] for n in names])
    counts = np.array([float(GAVEL_FLEET[t]) for t in types])
    x, value = gavel_lp(throughput, counts, np.ones(len(names)))
    equal_share = (throughput * equal_allocation(counts, len(names))).sum(axis=1)
    gavel_throughput = (throughput * x).sum(axis=1)
    w = Workload.load({
        "name": f"gavel-{len(names)}",
        "devices": [{"id": t, "model": t, "count": GAVEL_FLEET[t], "power_levels": [{"cap_w": 250, "speed": 1.0}]}
                    for t in types],
        "jobs": [{"id": n, "work_hours": 10.0, "parallel_fraction": 1.0, "max_devices": 1,
                  "speed_on": {t: float(throughput[i, c]) for c, t in enumerate(types)}}
                 for i, n in enumerate(names)],
        "objective": "max_min_speedup",
    })
    plan = optsched.plan(w, time_limit_s=30)
    lines = [
        f"### {len(names)} jobs ({copies} of each model) on {sum(GAVEL_FLEET.values())} GPUs "
        f"({', '.join(f'{c} {t}' for t, c in GAVEL_FLEET.items())})",
        "",
        f"Gavel's LP: max-min {value:.3f} of the equal-share throughput. optsched max_min_speedup: "
        f"{plan.status.value}"
        + (f", fairness {plan.fairness:.3f} of the solo throughput, verified "
           f"{'clean' if not optsched.verify(w, plan) else 'with violations'}" if plan.feasible else
           " (" + "; ".join(plan.diagnosis[-1:]) + ")"),
        "",
        "| job | Gavel X (K80 / P100 / V100 time) | Gavel steps/s | / equal share | optsched GPU | optsched steps/s "
        "| / solo | optsched / equal share |",
        "|---|---|---:|---:|---|---:|---:|---:|",
    ]
    by_job = {p.job: p for p in plan.placements}
    if not plan.feasible:
        lines[-2:] = [
            "| job | Gavel X (K80 / P100 / V100 time) | Gavel steps/s | / equal share |", "|---|---|---:|---:|",
        ]
        lines += [f"| {n} | {' / '.join(f'{v:.2f}' for v in x[i])} | {gavel_throughput[i]:.2f} | "
                  f"{gavel_throughput[i] / equal_share[i]:.2f} |" for i, n in enumerate(names)]
        return [*lines, ""]
    for i, n in enumerate(names):
        p = by_job[n]
        gpu = p.allocations[0].device if p.allocations else "-"
        solo = p.solo_speedup or 0.0
        lines.append(
            f"| {n} | {' / '.join(f'{v:.2f}' for v in x[i])} | {gavel_throughput[i]:.2f} | "
            f"{gavel_throughput[i] / equal_share[i]:.2f} | {gpu} | {p.speedup:.2f} | "
            f"{p.speedup / solo if solo else 0:.2f} | {p.speedup / equal_share[i]:.2f} |"
        )
    gavel_norm = gavel_throughput / equal_share
    ours = np.array([by_job[n].speedup for n in names]) / equal_share
    lines += [
        "",
        f"Over the equal-share normalisation: Gavel min {gavel_norm.min():.3f}, Jain {jain(list(gavel_norm)):.3f}, "
        f"total {gavel_throughput.sum():.1f} steps/s; optsched min {ours.min():.3f}, Jain {jain(list(ours)):.3f}, "
        f"total {sum(p.speedup for p in plan.placements):.1f} steps/s.",
        "",
    ]
    return lines


def table(rows: list[Row]) -> list[str]:
    lines = [
        "| case | objective | status | s | min S/S^solo | Jain | worst team / share | weighted speedup | price "
        "| violations | value / bound (gap) |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    best = {r.case: r.weighted_speedup for r in rows if r.objective == "weighted_speedup"}
    for r in rows:
        price = 1 - r.weighted_speedup / best[r.case] if best.get(r.case) else 0.0
        lines.append(
            f"| {r.case} | {r.objective} | {r.status} | {r.seconds:.1f} | {r.min_normalised:.3f} | {r.jain:.3f} | "
            f"{r.worst_team:.3f} | {r.weighted_speedup:,.1f} | {price:.1%} | {r.violations} | {_gap(r)} |"
        )
    return lines + [""]


def _gap(r: Row) -> str:
    """The plan's fairness value (on its own S^solo) over its bound, the gap, and its unproven solo problems."""
    if r.bound is None:
        return "-"
    if r.fairness is None or r.bound <= 0:
        return "-"
    unproven = f"; {r.unproven_solo} S^solo unproven" if r.unproven_solo else ""
    return f"{r.fairness:.4f} / {r.bound:.4f} ({(r.bound - r.fairness) / r.bound:.1%}{unproven})"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1, help="M workloads (seeds 0..)")
    parser.add_argument("--queues", type=int, default=3, help="small night queues (seeds 1..)")
    parser.add_argument("--time-limit", type=float, default=30.0)
    parser.add_argument("--out", default="bench/results/fairness.md")
    args = parser.parse_args(argv)
    started = time.monotonic()
    load_at_start = os.getloadavg()[0]
    rows: list[Row] = []
    for seed in range(args.seeds):
        rows += compare(f"M seed {seed}", generate("M", seed), args.time_limit)
    nights: list[str] = []
    night_team_rows: list[str] = []
    for seed in range(1, args.queues + 1):
        rows += compare(f"night small-{seed}", snapshot(night_queue(seed, "small")), args.time_limit)
        runs, team_rows = night_runs(seed)
        nights += runs
        night_team_rows += team_rows
    lines = [
        "# Fairness benchmark",
        "",
        f"Produced by `{' '.join(['python -m bench.fairness', *sys.argv[1:]])}` on {datetime.date.today()} "
        f"({os.cpu_count()} cores, shared; load average {load_at_start:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end); Python "
        f"{platform.python_version()}, time limit {args.time_limit:g} s per plan, fairness tolerance "
        f"{FAIRNESS_TOLERANCE:.0%}, {time.monotonic() - started:.0f} s in all.",
        "",
        "## Price of fairness",
        "",
        "Jobs: those the weighted_speedup plan admits (all fit at once), in teams comm (p < 0.9), mid and parallel "
        "(p >= 0.97). S^solo: each job alone on the fleet under the same budgets (the max-min plan's). "
        "*price*: the weighted speedup given up against weighted_speedup. *value / bound (gap)*: the plan's own "
        "fairness value (on its own S^solo, which may differ from the max-min plan's when a solo problem is not "
        "proven in time) over its proven bound.",
        "",
        *table(rows),
        "## The night planner's timelines, per night objective",
        "",
        "The same small queues planned over an 8-hour night by `plan_night` (all candidates; *chosen* the one it "
        "kept), under each objective (`night_fairness` after the slash). x_j: the share of job j's work done by "
        "morning; *teams*: min over teams of their x sum / share (team_max_min's value); rho = (finish - release) / "
        "(work / speedup on 1/n of the fleet), n the queue's jobs (optsched/night/fairness.py); *wmct*: weighted "
        "mean completion in hours (the price of fairness over the night). *milp:* the same for the `milp` "
        "candidate's own timeline (its events weighted by the objective; the others are not). *fairness*: the "
        "summary's value by morning (fairness objectives), *its bound*: fair_bound's upper bound on it and the gap; "
        "*max rho bound*: the lower bound on the largest rho and the gap (optsched/night/fair_bound.py).",
        "",
        "| queue | objective | chosen | s | min x | Jain x | teams | max rho | wmct | never ran | milp: min x "
        "| milp: teams | milp: max rho | milp: wmct | fairness | its bound (gap) | max rho bound (gap) | violations |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *nights,
        "",
        "Per team:",
        "",
        "| queue | objective | team | jobs | share | device-hours | of all | worst rho | never ran |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
        *night_team_rows,
        "",
        "## Beside Gavel's max-min fairness (one device per job, p = 1)",
        "",
        *gavel_case(2),
        *gavel_case(3),
    ]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
