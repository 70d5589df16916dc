"""What GET /metrics costs (api/metrics.py): a scrape reads the jobs that ended since the last one from the store,
so its cost grows with the table; this measures it on a SQLite store holding N ended jobs, each with the demo's
workload and a plan of its size as documents (so the rows are as wide as real ones).

For each N: the first scrape after N jobs ended (it reads a page of at most 10,000 of them), the scrapes that
follow until all are read, and the text's size; then the scrapes of a server started after they ended (nothing
new: the query alone, the cost of every scrape of a quiet server over that table); and, once,
what the request hooks add to a request (GET /healthz through the Flask test client, with and without them).
Writes bench/results/metrics.md.

    nice -n 10 .venv/bin/python -m bench.metrics [--rows 1000,10000,50000] [--scrapes 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import insert

from api import create_app, shutdown
from api.metrics import PAGE_ROWS
from optsched.infra.store import JobState, PlanStore, plans

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "metrics.md"
WORKLOAD = json.loads((ROOT / "models" / "workloads" / "demo.json").read_text())


def fill(url: str, rows: int, ended: datetime) -> None:
    """`rows` finished plans, each with the demo's workload and a document of the same size as its plan, ending
    within the second before `ended`."""
    store = PlanStore(url)
    document = {"status": "optimal", "objective": 1.0, "padding": ["x" * 64] * (len(json.dumps(WORKLOAD)) // 70)}
    batch = []
    for i in range(rows):
        at = ended - timedelta(microseconds=rows - i)
        batch.append({
            "id": uuid.uuid4().hex, "kind": "plan", "status": JobState.finished.value, "verdict": "optimal",
            "workload": WORKLOAD, "params": {}, "plan": document, "submitted_at": at - timedelta(seconds=3),
            "started_at": at - timedelta(seconds=1), "finished_at": at, "attempts": 1,
        })
        if len(batch) == 2_000 or i == rows - 1:
            with store.engine.begin() as c:
                c.execute(insert(plans), batch)
            batch = []
    store.close()


def scrape_ms(client) -> tuple[float, int]:
    started = time.perf_counter()
    response = client.get("/metrics")
    assert response.status_code == 200
    return (time.perf_counter() - started) * 1000, len(response.data)


def measure(rows: int, scrapes: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{folder}/bench.db"
        PlanStore(url).close()
        app = create_app({"DATABASE_URL": url, "START_WORKERS": False, "API_TOKEN": None, "AUTH": "off"})
        try:
            fill(url, rows, datetime.now(UTC))  # ended after the app started: all of them are to be counted
            client = app.test_client()
            first, size = scrape_ms(client)
            catch_up = [scrape_ms(client)[0] for _ in range(-(-rows // PAGE_ROWS) - 1)]
            text = client.get("/metrics").get_data(as_text=True)
            counted = next(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                           if line.startswith('optsched_solves_total{kind="plan",outcome="optimal"}'))
            assert counted == rows, (counted, rows)
        finally:
            shutdown(app)
        # A server started after they ended: its scrapes find nothing new, so they cost the query alone.
        app = create_app({"DATABASE_URL": url, "START_WORKERS": False, "API_TOKEN": None, "AUTH": "off"})
        try:
            client = app.test_client()
            steady = [scrape_ms(client)[0] for _ in range(scrapes)]
        finally:
            shutdown(app)
        database_mb = Path(f"{folder}/bench.db").stat().st_size / 2**20
        return {"rows": rows, "first_ms": first, "catch_up_ms": max(catch_up, default=0.0),
                "steady_ms": statistics.median(steady), "bytes": size, "database_mb": database_mb}


def hook_cost(requests: int) -> tuple[float, float]:
    """Median microseconds of GET /healthz through the test client, with the metrics hooks and without them."""
    with tempfile.TemporaryDirectory() as folder:
        app = create_app({"DATABASE_URL": f"sqlite:///{folder}/h.db", "START_WORKERS": False, "API_TOKEN": None,
                          "AUTH": "off"})
        try:
            client = app.test_client()

            def median_us() -> float:
                times = []
                for _ in range(requests):
                    started = time.perf_counter()
                    client.get("/healthz")
                    times.append((time.perf_counter() - started) * 1e6)
                return statistics.median(times)

            with_hooks = median_us()
            before, after = dict(app.before_request_funcs), dict(app.after_request_funcs)
            app.before_request_funcs[None] = [f for f in before[None] if f.__name__ != "_started"]
            app.after_request_funcs[None] = [f for f in after[None] if f.__name__ != "_count_request"]
            without = median_us()
            return with_hooks, without
        finally:
            shutdown(app)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="1000,10000,50000")
    parser.add_argument("--scrapes", type=int, default=5)
    args = parser.parse_args()
    load = os.getloadavg()
    results = [measure(int(n), args.scrapes) for n in args.rows.split(",")]
    with_hooks, without = hook_cost(2_000)
    load_after = os.getloadavg()
    lines = [
        "# /metrics: what a scrape costs",
        "",
        f"`nice -n 10 .venv/bin/python -m bench.metrics --rows {args.rows} --scrapes {args.scrapes}`, "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, SQLite, load average {load[0]:.1f} before and "
        f"{load_after[0]:.1f} after (2 cores, shared).",
        "",
        "| jobs ended | database | first scrape (reads up to 10,000) | slowest catch-up scrape | steady scrape "
        "(nothing new), median | exposition |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(f"| {r['rows']:,} | {r['database_mb']:,.0f} MB | {r['first_ms']:,.0f} ms | "
                     f"{r['catch_up_ms']:,.0f} ms | {r['steady_ms']:,.1f} ms | {r['bytes']:,} B |")
    lines += [
        "",
        f"The request hooks: GET /healthz through the Flask test client takes {with_hooks:,.0f} µs with them and "
        f"{without:,.0f} µs without (median of 2,000 each).",
        "",
    ]
    RESULTS.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
