"""Retention benchmark: the data folder's size under a flood of plans, without retention, with the sweep, and with a
team quota (issue 25, item 2).

    python -m bench.retention                              # 300 plans per mode (a minute or two)
    python -m bench.retention --count 100 --out /tmp/r.md

The M workload (optsched.testing.instances, 200 jobs) is planned once and verified; then, per mode, a fresh app
(create_app on SQLite, one team) takes `count` POST /v1/plans of it as fast as the test client sends them, and each
accepted plan is finished with that plan as a worker finishes one (claim, then record_outcome): the flood of the
red team's finding, with results of about the same size each. The data folder (the SQLite file with its WAL) is
measured after every POST; the retention sweeper runs on its thread as in `optsched serve`.

Modes: `keep` (RESULT_TTL_S 0, no quota: the old behaviour), `sweep` (a time-to-live of --ttl seconds, swept every
0.5 s), `quota` (no time-to-live, TEAM_QUOTA_MB --quota-mb). Results go to bench/results/retention.md.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import optsched
from optsched.infra.queue import record_outcome
from optsched.infra.store import document_bytes
from optsched.testing.instances import generate
from optsched.verify.placement import verify

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "retention.md"
TOKEN = "bench-retention-token-3e1f"


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def flood(mode: str, count: int, workload: dict[str, Any], plan: dict[str, Any], ttl_s: float,
          quota_mb: float) -> dict[str, Any]:
    from api import create_app, services, shutdown

    config = {"keep": {"RESULT_TTL_S": 0, "TEAM_QUOTA_MB": 0},
              "sweep": {"RESULT_TTL_S": ttl_s, "TEAM_QUOTA_MB": 0, "RETENTION_SWEEP_S": 0.5},
              "quota": {"RESULT_TTL_S": 0, "TEAM_QUOTA_MB": quota_mb}}[mode]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "var"
        app = create_app({"DATABASE_URL": f"sqlite:///{folder}/optsched.db", "START_WORKERS": False,
                          "API_TOKEN": TOKEN, "QUEUE_SIZE": count + 10, "SYNC_WAIT_S": 0, **config})
        s = services(app)
        s.retention.start()  # as create_app does with START_WORKERS (no solver pool here: plans are finished below)
        client = app.test_client()
        codes: dict[int, int] = {}
        peak = 0
        started = time.monotonic()
        try:
            for _ in range(count):
                answer = client.post("/v1/plans", json=workload, headers={"Authorization": f"Bearer {TOKEN}"})
                codes[answer.status_code] = codes.get(answer.status_code, 0) + 1
                if answer.status_code == 202:
                    claimed = s.store.claim(answer.get_json()["id"])
                    record_outcome(s.store, claimed.id, claimed.attempts, "result", (plan["status"], plan))
                peak = max(peak, folder_bytes(folder))
            elapsed = time.monotonic() - started
            final = folder_bytes(folder)
            rows = len(s.store.list(limit=100_000, team="default")[0])
        finally:
            shutdown(app)
    return {"mode": mode, "codes": codes, "peak": peak, "final": final, "rows": rows, "elapsed": elapsed}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--ttl", type=float, default=5.0, help="the sweep mode's time-to-live, seconds")
    parser.add_argument("--quota-mb", type=float, default=20.0, help="the quota mode's team quota, MB")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)

    workload = generate("M", 1, options={"time_limit_s": 20, "mip_gap": 0.01}).model_dump(mode="json",
                                                                                        exclude_none=True)
    plan = optsched.plan(workload).model_dump(mode="json")
    problems = verify(workload, plan)
    if problems:
        raise SystemExit(f"the benchmark's plan does not verify: {problems[:3]}")
    load = os.getloadavg()
    results = [flood(mode, args.count, workload, plan, args.ttl, args.quota_mb) for mode in ("keep", "sweep", "quota")]
    load_after = os.getloadavg()
    mb = 2**20
    lines = [
        "# Retention: the data folder under a flood",
        "",
        f"- command: `.venv/bin/python -m bench.retention{' ' + ' '.join(sys.argv[1:]) if sys.argv[1:] else ''}`",
        f"- date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; {platform.node()}, {os.cpu_count()} cores,"
        f" load average {load[0]:.2f} before, {load_after[0]:.2f} after",
        f"- per POST: the M workload ({len(workload['jobs'])} jobs, {document_bytes(workload) / 1024:,.0f} KB of JSON)"
        f" and, once finished, its verified plan ({document_bytes(plan) / 1024:,.0f} KB); {args.count} POSTs per "
        "mode, sent one after the other without pause",
        "",
        "| mode | settings | answers | rows left | data folder peak | data folder at the end | time |",
        "|---|---|---|---|---|---|---|",
    ]
    settings = {"keep": "RESULT_TTL_S=0, no quota", "sweep": f"RESULT_TTL_S={args.ttl:g}, sweep every 0.5 s",
                "quota": f"TEAM_QUOTA_MB={args.quota_mb:g}, RESULT_TTL_S=0"}
    for r in results:
        answers = ", ".join(f"{n} x {code}" for code, n in sorted(r["codes"].items()))
        lines.append(f"| {r['mode']} | {settings[r['mode']]} | {answers} | {r['rows']} | {r['peak'] / mb:,.1f} MB | "
                     f"{r['final'] / mb:,.1f} MB | {r['elapsed']:.1f} s |")
    lines += ["", "The folder holds the SQLite file and its write-ahead log; deleted rows' pages are reused, not "
              "returned to the file system, so the peak is the bound that matters."]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
