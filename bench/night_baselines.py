"""What the night's list schedulers cost: FIFO, EDF, EASY and conservative backfilling on the night benchmark's
queues, each timed over --repeats runs (the least kept) and verified, with a digest of its timeline so that two
versions of the code can be shown to plan the same nights (the planner runs all four beside its candidates on
queues of up to 150 jobs, inside its 20-s budget).

    python -m bench.night_baselines --label after --out bench/results/night-baselines.md
    PYTHONPATH=../clone python ../main/bench/night_baselines.py --label before   # another version, same queues

Results go to --out (a table per run: seconds per queue and policy, the digests, totals by generator).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import os
import platform
import sys
import time
from pathlib import Path

from bench.night import BASELINES, START, _queue, suite_of
from optsched.verify.timeline import verify_timeline

DEFAULT_SIZES = "small,medium,burst,wide,hardheavy,lowpower,weights,affinity,gangs,failures,tight,fanin"


def digest(plan) -> str:
    """A short hash of the timeline (every job's segments, the summary's measures), elapsed times left out."""
    summary = plan.summary
    text = repr(
        (
            [t.model_dump(mode="json") for t in plan.jobs],
            summary.makespan_hours,
            summary.energy_kwh,
            summary.weighted_mean_completion_hours,
        )
    )
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help="comma-separated sizes / families")
    parser.add_argument("--repeats", type=int, default=1, help="runs per queue and policy; the least time is kept")
    parser.add_argument("--label", default="", help="what this run measures (before, after, a commit)")
    parser.add_argument("--out", type=Path, default=Path("bench/results/night-baselines.md"))
    args = parser.parse_args(argv)
    sizes = args.sizes.split(",")
    suite = suite_of(sizes)
    load = os.getloadavg()
    began = time.perf_counter()
    rows, totals = [], {name: 0.0 for name in BASELINES}
    for family, seed in suite:
        queue, hours = _queue(family, seed)
        cells, digests = [], []
        for name, fn in BASELINES.items():
            best = float("inf")
            for _ in range(max(1, args.repeats)):
                started = time.perf_counter()
                plan = fn(queue, start=START, hours=hours)
                best = min(best, time.perf_counter() - started)
            problems = verify_timeline(queue, plan)
            if problems:
                raise SystemExit(f"{family}-{seed} {name}: the verifier found {problems[:3]}")
            totals[name] += best
            cells.append(f"{best:.2f}")
            digests.append(digest(plan))
        rows.append(f"| {family}-{seed} | {len(queue['jobs'])} | {' | '.join(cells)} | {' '.join(digests)} |")
        print(rows[-1], file=sys.stderr, flush=True)
    header = " | ".join(BASELINES)
    lines = [
        f"## {args.label or 'run'}: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
        "",
        f"- command: `python -m bench.night_baselines {' '.join(argv if argv is not None else sys.argv[1:])}`",
        f"- machine: {os.cpu_count()} cores, {platform.system()}, Python {platform.python_version()}; load average "
        f"{load[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; {time.perf_counter() - began:.0f} s in all",
        f"- seconds per timeline (the least of {max(1, args.repeats)}), every timeline verified; digest: a hash of "
        "the timeline, equal digests are equal timelines",
        "",
        f"| queue | jobs | {header} | digests ({', '.join(BASELINES)}) |",
        "|---|---:|" + "---:|" * len(BASELINES) + "---|",
        *rows,
        f"| total | | {' | '.join(f'{totals[name]:.2f}' for name in BASELINES)} | |",
        "",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    previous = args.out.read_text() if args.out.exists() else "# The night's list schedulers: cost per timeline\n\n"
    args.out.write_text(previous + "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
