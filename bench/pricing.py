"""Pricing side by side: one full round of column generation's pricing (every candidate job, at the master's LP
duals after the seed) in this process, on 2 threads, over local processes, and fanned out to RQ workers; and the
Lagrangian bound at the same duals on 1 and 2 threads.

    python -m bench.pricing                                  # racks 10K, racks3 2K, mixed 2K; 3 repetitions
    python -m bench.pricing --instances racks:10K --repeat 5 --out /tmp/x.md
    python -m bench.pricing --threads-only --repeat 5        # this process and threads only (no Redis)

Needs Redis (OPTSCHED_BENCH_REDIS, default redis://127.0.0.1:6379/14). The RQ workers are real `optsched worker`
pools (1, 2 and 4 processes) on a queue of their own with an SQLite store; they run on this machine, so they show
the cost of the fan-out (arrays, duals and columns through Redis) against the same cores, not the gain of other
machines. Every answer is checked equal to the in-process columns.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
from redis import Redis

from bench.large import instance
from bench.rq_fleet import BENCH_REDIS, Fleet
from optsched import Workload
from optsched.infra.rq.pricing import RQPricing
from optsched.model.data import ModelData
from optsched.solve.budget import TimeBudget
from optsched.solve.columns import ColumnMaster, JobBounds, Pricing, sample_prices
from optsched.solve.construct import construct

DEFAULT_INSTANCES = "racks:10K,racks3:2K,mixed:2K"


def round_at_duals(family: str, size: str) -> tuple[ColumnMaster, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The master after the sample's seed columns and its first LP: (master, sigma, mu, lam, upper)."""
    data = ModelData(Workload.model_validate(instance(family, size, 0)))
    master = ColumnMaster(data)
    pricing, bounds = Pricing(master), JobBounds(master)
    first = construct(data)
    master.add_counts(first)
    prices = sample_prices(data, first, TimeBudget.of(20.0))
    if prices is not None:
        pricing.seed(*prices, bounds.bound(*prices)[1])
    solved = master.solve_lp(time.monotonic() + 120.0)
    assert solved is not None
    _, sigma, mu, lam = solved
    return master, sigma, mu, lam, bounds.bound(mu, lam)[1]


def timed(price: Callable[[], list], repeat: int) -> tuple[list[float], list]:
    times, answer = [], []
    for _ in range(repeat):
        started = time.perf_counter()
        answer = price()
        times.append(time.perf_counter() - started)
    return times, answer


def measure(
    family: str, size: str, repeat: int, redis_url: str, tmp: Path, threads_only: bool = False
) -> list[tuple[str, list[float], str]]:
    master, sigma, mu, lam, upper = round_at_duals(family, size)
    serial = Pricing(master)
    times, reference = timed(lambda: serial.price(sigma, mu, lam, upper), repeat)
    blocks = len(serial._blocks(np.flatnonzero(upper - sigma > 0)))
    rows = [("this process", times, f"{len(reference):,} columns, {blocks} blocks")]
    rows += _threads(master, sigma, mu, lam, upper, reference, repeat)
    if threads_only:
        return rows
    for workers in (2, 4):
        local = Pricing(master, workers=workers)
        try:
            local.price(sigma, mu, lam, upper)  # the pool starts outside the timing
            times, answer = timed(partial(local.price, sigma, mu, lam, upper), repeat)
        finally:
            local.close()
        assert answer == reference
        rows.append((f"{workers} local processes", times, ""))
    for workers in (1, 2, 4):
        fleet = Fleet(workers, tmp / f"{uuid.uuid4().hex}.sqlite", redis_url)
        fan_out = RQPricing(fleet.keys)
        fanned = Pricing(master, fan_out=fan_out)
        try:
            times, answer = timed(partial(fanned.price, sigma, mu, lam, upper), repeat)
        finally:
            fanned.close()
            fleet.close()
        assert answer == reference
        stats = fan_out.stats
        share = (f"chunks priced by workers {stats.chunks_by_workers}, here {stats.chunks_here}, "
                 f"stragglers {stats.stragglers}")
        rows.append((f"RQ fan-out, {workers} worker(s)", times, share))
    return rows


def _threads(master: ColumnMaster, sigma, mu, lam, upper, reference: list, repeat: int):
    """Pricing on 2 threads (SolveOptions.pricing_threads), and the Lagrangian bound on 1 and 2 threads: the same
    columns and bound, asserted."""
    bounds = JobBounds(master)
    one, bound = timed(lambda: bounds.bound(mu, lam), repeat)
    master.relax.threads = 2
    try:
        times, answer = timed(lambda: Pricing(master).price(sigma, mu, lam, upper), repeat)
        two, again = timed(lambda: bounds.bound(mu, lam), repeat)
    finally:
        master.relax.threads = 1
    assert answer == reference
    assert again[0] == bound[0] and np.array_equal(again[1], bound[1])
    return [
        ("2 threads", times, ""),
        ("the bound, 1 thread", one, "ratio over this process's pricing"),
        ("the bound, 2 threads", two, f"{statistics.median(two) / statistics.median(one):.2f} of 1 thread's"),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", default=DEFAULT_INSTANCES)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("bench/results/pricing.md"))
    parser.add_argument("--threads-only", action="store_true", help="this process and threads only (no Redis)")
    args = parser.parse_args(argv)
    redis_url = BENCH_REDIS
    if not args.threads_only:
        Redis.from_url(redis_url).ping()
    load = os.getloadavg()
    lines = [
        "# Pricing: in this process, local processes, RQ workers",
        "",
        f"`python -m bench.pricing --instances {args.instances} --repeat {args.repeat}"
        f"{' --threads-only' if args.threads_only else ''}`, "
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, load at start {load[0]:.1f}. One full pricing round at the master's "
        "LP duals after the seed; every answer equal to this process's columns. Ratio: median time over this "
        "process's median.",
        "",
        "| instance | pricing | median s | min-max s | ratio | notes |",
        "|---|---|---:|---:|---:|---|",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.instances.split(","):
            family, size = spec.split(":")
            rows = measure(family, size, args.repeat, redis_url, Path(tmp), args.threads_only)
            base = statistics.median(rows[0][1])
            for name, times, note in rows:
                median = statistics.median(times)
                lines.append(f"| {family} {size} | {name} | {median:.2f} | {min(times):.2f}-{max(times):.2f} | "
                             f"{median / base:.2f} | {note} |")
                print(lines[-1], flush=True)
    lines += ["", f"Load at the end {os.getloadavg()[0]:.1f}.", ""]
    args.out.write_text("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
