"""Outage figures for bench/results/reliability.md ("Outages"): the scenarios of tests/outages at the deployment's
default lease (15 s) and result retry (30 s), a 17 s database outage as in the fault test of issue 18, and a
second database outage with a 5 s result retry, so that answers go through the spool.

    .venv/bin/python -m bench.outages [--append bench/results/reliability.md] [--db-down 17] [--redis-down 10]

Each scenario runs against a Redis server and a PostgreSQL database of its own (tests/support/outages.py) with
two one-process `optsched worker` pools and one `optsched serve`; clients submit continuously (a long plan, 2 s of
solving, every fourth) and read plans and lists. The section is printed, and appended to the file given.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from tests.support.outages import (
    TABLE_HEADER,
    Deployment,
    OutageReport,
    database_outage,
    redis_outage,
    worker_killed,
)


def _run(root: Path, *, result_retry_s: float, scenarios: list, traffic: dict) -> list[OutageReport]:
    deployment = Deployment(root, lease_s=15.0, grace_s=5.0, result_retry_s=result_retry_s).start()
    try:
        return [scenario(deployment, **traffic) for scenario in scenarios]
    finally:
        deployment.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--append", type=Path, help="Markdown file to append the section to.")
    parser.add_argument("--db-down", type=float, default=17.0, help="Seconds the database refuses connections.")
    parser.add_argument("--redis-down", type=float, default=10.0, help="Seconds Redis stays down.")
    parser.add_argument("--clients", type=int, default=3)
    args = parser.parse_args(argv)

    started, load = time.monotonic(), os.getloadavg()[0]
    traffic = {"clients": args.clients, "pace_s": 0.6, "long_every": 4, "long_s": 2.0}
    with tempfile.TemporaryDirectory(prefix="optsched-outages-") as tmp:
        reports = _run(Path(tmp) / "defaults", result_retry_s=30.0, traffic=traffic, scenarios=[
            lambda d, **t: redis_outage(d, persistent=False, down_s=args.redis_down, **t),
            lambda d, **t: redis_outage(d, persistent=True, down_s=args.redis_down, **t),
            lambda d, **t: database_outage(d, down_s=args.db_down, **t),
            lambda d, **t: worker_killed(d, **t),
        ])
        reports += _run(Path(tmp) / "spool", result_retry_s=5.0, traffic=traffic, scenarios=[
            lambda d, **t: _renamed(database_outage(d, down_s=args.db_down, **t), "result retry 5 s: spooled"),
        ])
    text = render(reports, args, time.monotonic() - started, load)
    print(text)
    if args.append is not None:
        with args.append.open("a") as out:
            out.write("\n" + text)
    return 0 if all(not r.problems for r in reports) else 1


def _renamed(report: OutageReport, note: str) -> OutageReport:
    report.scenario = f"{report.scenario} ({note})"
    return report


def render(reports: list[OutageReport], args: argparse.Namespace, seconds: float, load: float) -> str:
    lines = [
        "## Outages (issue 18)",
        "",
        "Dependencies of the run's own: a `redis-server` on a free loopback port with its own data directory, a "
        "PostgreSQL database created for the run (made to refuse connections with `ALTER DATABASE ... "
        "ALLOW_CONNECTIONS false` while its sessions are terminated); two one-process `optsched worker` pools "
        "(lease 15 s, grace 5 s) and one `optsched serve`; "
        f"{args.clients} clients submitting continuously with Idempotency-Keys (retrying 503s) and a reader of "
        "plans and lists. Recovery is timed from the moment the dependency answers again (Redis restarted, the "
        "database accepting connections; for the killed pool, its replacement listening).",
        "",
        TABLE_HEADER,
        *(r.row() for r in reports),
        "",
        "Client statuses while the dependency was down:",
        "",
        *(f"- {r.scenario}: " + ", ".join(f"{k}: {v}" for k, v in sorted(r.statuses_during.items()))
          + (f"; /readyz said \"{r.readyz_during}\"" if r.readyz_during else "") for r in reports),
        "",
        "Every accepted plan ended final (" + ", ".join(
            f"{r.scenario.split(',')[0]}: {dict(r.final)}" for r in reports) + ") with exactly one row and a plan "
        "the verifier accepts; claims per row: " + "; ".join(
            f"{dict(sorted(r.attempts.items()))}" for r in reports) + f"; re-solves caused by the outages: "
        f"{sum(r.re_solves for r in reports if 'killed' not in r.scenario)} (the killed pool's plan is solved "
        "again once, as designed). Worker logs: "
        f"{sum(r.tracebacks for r in reports)} tracebacks, {sum(r.worker_respawns for r in reports)} worker "
        "respawns; answers spooled / recorded from the spool: "
        + ", ".join(f"{r.spooled} / {r.spool_replayed}" for r in reports) + ".",
        "",
        f"`.venv/bin/python -m bench.outages --db-down {args.db_down:g} --redis-down {args.redis_down:g}` - "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {seconds:.1f} s, load average {load:.2f} at the start; "
        f"{os.cpu_count()} cores, {platform.system()}, Python {platform.python_version()}.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
