"""Re-plan benchmark: `optsched.replan` against planning afresh after 50 random changes on M-size workloads.

    python -m bench.replan                          # 5 seeds x 10 changes (a few minutes)
    python -m bench.replan --seeds 1 --changes 4 --out /tmp/r.md

Per seed, the M workload (optsched.testing.instances, 200 jobs x 16 groups x 4 levels) is planned once; each
change (device failures, a fleet or rack budget cut, jobs added, jobs removed, or all of these at once) is then
applied and both the re-plan and a fresh `optsched.plan` of the changed workload are made, each checked with
the verifier. Compared: running jobs moved (device groups or counts changed, stopped included), the objective
(re-plan / fresh) and the wall time (re-plan / fresh). Results go to bench/results/replan.md.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import random
import statistics
import sys
import time
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

import highspy

import optsched
from optsched.replan import move_costs, moved_jobs, replan
from optsched.schema.workload import Workload
from optsched.solve.highs import new_highs
from optsched.testing.instances import generate
from optsched.verify.placement import verify

KINDS = ("failure", "budget", "rack budget", "add jobs", "remove jobs", "mixed")
# A HiGHS solve the solve layer abandons (it ignored its interrupt) holds highspy's class-wide "solver running"
# lock until it ends, and every other solve in the process fails meanwhile: wait for it and retry, counting.
SOLVER_WAIT_S = 300.0
RETRIES = {"count": 0}


def _solver_free() -> None:
    probe = new_highs()
    stop = time.monotonic() + SOLVER_WAIT_S
    while probe.is_solver_running() and time.monotonic() < stop:
        time.sleep(0.5)


def attempt(fn, *args):
    """fn(*args) and its wall time; after a busy-solver error, once more when the abandoned solve has ended."""
    for tries in range(2):
        _solver_free()
        started = time.monotonic()
        try:
            return fn(*args), time.monotonic() - started
        except highspy.HighsError as exc:
            if "already running" not in str(exc) or tries:
                raise
            RETRIES["count"] += 1
            print(f"  solver busy (an abandoned solve): retrying {fn.__name__}", file=sys.stderr, flush=True)
    raise AssertionError("unreachable")


@dataclass
class Row:
    seed: int
    index: int
    kind: str
    change: str
    status: str
    fresh_status: str
    moved: int | None = None
    fresh_moved: int | None = None
    ratio: float | None = None
    cost: float | None = None  # the moves' cost in objective units (pi_j summed), re-plan and fresh
    fresh_cost: float | None = None
    fresh_objective: float | None = None
    seconds: float = 0.0
    fresh_seconds: float = 0.0


def random_change(rng: random.Random, workload: Workload, current: optsched.Plan, kind: str, seed: int, index: int):
    """A change of `kind` that is valid for `workload` and `current` (a dict as a client would send it)."""
    change: dict[str, Any] = {}
    used: dict[str, int] = {}
    for p in current.placements:
        for a in p.allocations:
            used[a.device] = used.get(a.device, 0) + a.count
    running = [p.job for p in current.placements if p.admitted]
    if kind in ("failure", "mixed"):
        groups = rng.sample(sorted(used), k=min(len(used), rng.choice((1, 1, 2))))
        counts = {g.id: g.count for g in workload.devices}
        change["device_failures"] = [{"device": g, "count": rng.randint(1, min(4, counts[g]))} for g in groups]
    if kind == "budget":
        change["budget_w"] = round(current.power_w * rng.uniform(0.85, 0.97))
    if kind == "rack budget":
        rack = rng.choice(sorted(current.power_by_domain))
        change["domains"] = {rack: round(current.power_by_domain[rack] * rng.uniform(0.85, 0.97))}
    if kind in ("add jobs", "mixed"):
        donor = generate("M", 1000 + seed * 100 + index)
        picked = rng.sample(donor.jobs, k=rng.randint(1, 5))
        change["add_jobs"] = [
            {**j.model_dump(mode="json", exclude_defaults=True), "id": f"new-{index}-{k}"} for k, j in enumerate(picked)
        ]
    if kind in ("remove jobs", "mixed"):
        change["remove_jobs"] = rng.sample(running, k=min(len(running), rng.randint(1, 5)))
    return change


def describe(change: dict[str, Any]) -> str:
    parts = []
    for f in change.get("device_failures", []):
        parts.append(f"-{f['count']} {f['device']}")
    if "budget_w" in change:
        parts.append(f"budget {change['budget_w']:,} W")
    for d, watts in change.get("domains", {}).items():
        parts.append(f"{d} {watts:,} W")
    if change.get("add_jobs"):
        parts.append(f"+{len(change['add_jobs'])} jobs")
    if change.get("remove_jobs"):
        parts.append(f"-{len(change['remove_jobs'])} jobs")
    return ", ".join(parts)


def run(seeds: int, changes: int, time_limit_s: float) -> tuple[list[Row], dict[int, float]]:
    rows: list[Row] = []
    base_seconds: dict[int, float] = {}
    for seed in range(seeds):
        workload = generate("M", seed, options={"time_limit_s": time_limit_s})
        current, base_seconds[seed] = attempt(optsched.plan, workload)
        assert current.feasible and verify(workload, current) == [], f"M seed {seed}: base plan {current.status}"
        rng = random.Random(f"replan-{seed}")
        for index in range(changes):
            kind = KINDS[(seed * changes + index) % len(KINDS)]
            change = random_change(rng, workload, current, kind, seed, index)
            try:
                result, seconds = attempt(replan, workload, current, change)
            except highspy.HighsError as exc:
                rows.append(Row(seed, index, kind, describe(change), f"error: {exc}", "-"))
                print(f"seed {seed} #{index} {kind:12s} error: {exc}", file=sys.stderr, flush=True)
                continue
            problems = verify(result.workload, result.plan)
            assert problems == [], (seed, index, problems[:3])
            fresh, fresh_seconds = attempt(optsched.plan, result.workload)
            assert verify(result.workload, fresh) == []
            row = Row(seed, index, kind, describe(change), result.plan.status.value, fresh.status.value,
                      seconds=seconds, fresh_seconds=fresh_seconds)
            if result.plan.feasible and fresh.feasible:
                row.moved = result.moved
                row.fresh_moved = len(moved_jobs(current, fresh, result.workload))
                row.ratio = result.plan.objective / fresh.objective
                row.fresh_objective = fresh.objective
                costs = move_costs(result.workload, current, result.move_cost_hours)
                row.cost = result.move_cost
                row.fresh_cost = sum(costs.get(j, 0.0) for j in moved_jobs(current, fresh, result.workload))
            rows.append(row)
            print(
                f"seed {seed} #{index} {kind:12s} {row.status:10s} moved {row.moved} vs {row.fresh_moved} ratio "
                f"{row.ratio if row.ratio is None else round(row.ratio, 4)} {seconds:.2f} s vs {fresh_seconds:.2f} s",
                file=sys.stderr,
                flush=True,
            )
    return rows, base_seconds


def _net_ratio(r: Row) -> float:
    fresh_objective = r.fresh_objective
    return (fresh_objective * r.ratio - r.cost) / (fresh_objective - r.fresh_cost)


def _median(values):
    return statistics.median(values) if values else float("nan")


def report(
    rows: list[Row], base_seconds: dict[int, float], argv: list[str], load_before, load_after, wall: float
) -> str:
    both = [r for r in rows if r.ratio is not None]
    timed = [r for r in rows if r.fresh_seconds > 0]
    lines = [
        "# Re-plan against planning afresh (M-size workloads)",
        "",
        f"Command: `{' '.join(['.venv/bin/python -m bench.replan', *argv])}`",
        f"Date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}; "
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"highspy {version('highspy')}; load average (1, 5, 15 min) before {load_before}, after {load_after} "
        f"(shared with other jobs); whole run {wall:.0f} s.",
        "",
        'Each workload is `generate("M", seed)` (200 jobs, 16 device groups, 4 power levels, default options:',
        "`mip_gap` 0.01, `move_cost_hours` 0.25), planned once; every change is re-planned (`optsched.replan`) and",
        "planned afresh (`optsched.plan` on the changed workload); both plans pass the verifier. *Moved*: jobs running",
        "in the current plan, still in the workload, whose device groups or counts changed (stopped included).",
        "",
        f"{len(rows)} changes; both feasible in {len(both)}; re-plan infeasible in "
        f"{sum(r.status == 'infeasible' for r in rows)} (fresh: {sum(r.fresh_status == 'infeasible' for r in rows)}); "
        f"failed twice with a busy-solver error (not measured): {sum(r.status.startswith('error') for r in rows)}.",
        "",
        "| | median | worst |",
        "|---|---|---|",
        f"| running jobs moved: re-plan | {_median([r.moved for r in both]):g} | "
        f"{max((r.moved for r in both), default=0)} |",
        f"| running jobs moved: fresh | {_median([r.fresh_moved for r in both]):g} | "
        f"{max((r.fresh_moved for r in both), default=0)} |",
        f"| moved, re-plan minus fresh | {_median([r.moved - r.fresh_moved for r in both]):g} | "
        f"{max((r.moved - r.fresh_moved for r in both), default=0):+d} |",
        f"| objective, re-plan / fresh | {_median([r.ratio for r in both]):.4f} | "
        f"{min((r.ratio for r in both), default=float('nan')):.4f} |",
        f"| move cost (weighted speedup), re-plan | {_median([r.cost for r in both]):.2f} | "
        f"{max((r.cost for r in both), default=0):.2f} |",
        f"| move cost (weighted speedup), fresh | {_median([r.fresh_cost for r in both]):.2f} | "
        f"{max((r.fresh_cost for r in both), default=0):.2f} |",
        f"| net objective (objective - move cost), re-plan / fresh | {_median([_net_ratio(r) for r in both]):.4f} | "
        f"{min((_net_ratio(r) for r in both), default=float('nan')):.4f} |",
        f"| wall time, re-plan / fresh | {_median([r.seconds / r.fresh_seconds for r in timed]):.2f} | "
        f"{max(r.seconds / r.fresh_seconds for r in timed):.2f} |",
        f"| wall time, re-plan (s) | {_median([r.seconds for r in timed]):.2f} | {max(r.seconds for r in timed):.2f} |",
        f"| wall time, fresh (s) | {_median([r.fresh_seconds for r in timed]):.2f} | "
        f"{max(r.fresh_seconds for r in timed):.2f} |",
        "",
        f"Re-plan moved no more jobs than planning afresh in {sum(r.moved <= r.fresh_moved for r in both)} of "
        f"{len(both)} changes and kept at least 95 % of its objective in {sum(r.ratio >= 0.95 for r in both)} of "
        f"{len(both)}. Base plans took {', '.join(f'{s:.1f}' for s in base_seconds.values())} s. Solves retried after "
        f"a busy-solver error (a solve the solve layer abandoned still held highspy's lock): {RETRIES['count']}.",
        "",
        *(
            f"Seed {r.seed} #{r.index} ({r.change}): the re-plan moved {r.moved} jobs, planning afresh "
            f"{r.fresh_moved}; the re-plan's moves cost {r.cost:.2f} and the fresh plan's {r.fresh_cost:.2f} (weighted "
            f"speedup), so its net objective is {_net_ratio(r):.4f} of the fresh plan's: the objective charges what "
            "moves cost, not how many there are."
            for r in both
            if r.moved > r.fresh_moved
        ),
        "",
        "By kind of change (medians):",
        "",
        "| change | n | moved: re-plan | moved: fresh | objective ratio | time ratio |",
        "|---|---|---|---|---|---|",
    ]
    for kind in KINDS:
        sub = [r for r in both if r.kind == kind]
        if sub:
            lines.append(
                f"| {kind} | {len(sub)} | {_median([r.moved for r in sub]):g} | "
                f"{_median([r.fresh_moved for r in sub]):g} | {_median([r.ratio for r in sub]):.4f} | "
                f"{_median([r.seconds / r.fresh_seconds for r in sub]):.2f} |"
            )
    lines += [
        "",
        "Every change:",
        "",
        "| seed | # | kind | change | re-plan | moved | move cost | fresh | moved | move cost | objective ratio | "
        "re-plan s | fresh s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.seed} | {r.index} | {r.kind} | {r.change} | {r.status} | {'-' if r.moved is None else r.moved} | "
            f"{'-' if r.cost is None else f'{r.cost:.2f}'} | {r.fresh_status} | "
            f"{'-' if r.fresh_moved is None else r.fresh_moved} | "
            f"{'-' if r.fresh_cost is None else f'{r.fresh_cost:.2f}'} | "
            f"{'-' if r.ratio is None else f'{r.ratio:.4f}'} | {r.seconds:.2f} | {r.fresh_seconds:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--changes", type=int, default=10, help="Changes per seed.")
    parser.add_argument("--time-limit", type=float, default=30.0, help="Seconds per solve (the default option).")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "replan.md")
    args = parser.parse_args(argv)
    load_before = tuple(round(x, 2) for x in os.getloadavg())
    started = time.monotonic()
    rows, base_seconds = run(args.seeds, args.changes, args.time_limit)
    load_after = tuple(round(x, 2) for x in os.getloadavg())
    text = report(rows, base_seconds, argv, load_before, load_after, time.monotonic() - started)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
