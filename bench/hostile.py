"""Hostile-client figures for bench/results/reliability.md, section "Hostile clients (issue 12)".

    python -m bench.hostile [--stalled 150,500,900] [--probes 200]

On loopback only, bounded in count and time:
1. stalled connections (each sends half its headers, then nothing) held by `optsched serve` (waitress), with
   /healthz latency (p50, p99, max) measured during the attack; the same against the server this replaced
   (gunicorn, gthread worker, 32 threads) with 33 stalled connections;
2. how long a body shorter than its Content-Length waits for its 408 (OPTSCHED_READ_TIMEOUT_S, default 20 s);
3. the cost of requests at the default limits, in-process (Flask test client, no HTTP server): a workload of
   OPTSCHED_MAX_JOBS jobs, /v1/verify of that many placements, the largest Gantt chart drawn
   (OPTSCHED_MAX_CHART_ROWS devices), and the refusals of the night plan that used to draw a 1400 x 72160 chart.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import requests

from tests.support.server import LiveServer, free_port, rss_mb

ROOT = Path(__file__).resolve().parents[1]
RESULTS_MD = ROOT / "bench" / "results" / "reliability.md"
SECTION = "## Hostile clients (issue 12)"


def stall(port: int, n: int) -> list[socket.socket]:
    held = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        held.append(s)
    return held


def probe(base: str, n: int, timeout_s: float = 5.0) -> dict:
    times, failures = [], 0
    for _ in range(n):
        started = time.monotonic()
        try:
            ok = requests.get(f"{base}/healthz", timeout=timeout_s).status_code == 200
        except requests.RequestException:
            ok = False
        times.append(time.monotonic() - started)
        failures += not ok
    times.sort()
    return {
        "p50_ms": round(statistics.median(times) * 1000, 1),
        "p99_ms": round(times[min(len(times) - 1, int(0.99 * len(times)))] * 1000, 1),
        "max_ms": round(times[-1] * 1000, 1),
        "failed": failures,
    }


def still_open(sockets: list[socket.socket]) -> int:
    """Connections the server has not closed (a closed one reads EOF at once)."""
    alive = 0
    for s in sockets:
        s.setblocking(False)
        try:
            alive += s.recv(1, socket.MSG_PEEK) != b""
        except BlockingIOError:
            alive += 1
        except OSError:
            pass
    return alive


def waitress_attack(folder: Path, counts: list[int], probes: int) -> list[dict]:
    rows = []
    with LiveServer(database=folder / "w.db", log=folder / "w.log", workers=1, threads=32) as server:
        server.start()
        rows.append({"stalled": 0, **probe(server.base, probes)})
        for n in counts:
            held = stall(server.port, n)
            try:
                figures = probe(server.base, probes)
                rows.append({"stalled": n, "held": still_open(held), **figures})
            finally:
                for s in held:
                    s.close()
            time.sleep(0.5)
        rss = rss_mb(server.pids()["http"][0])
    rows[-1]["http_rss_mb"] = round(rss or 0, 1)
    return rows


def gunicorn_attack(folder: Path, probes: int) -> dict:
    """The server this replaced: gunicorn, one gthread worker, 32 threads, with 33 stalled connections."""
    port = free_port()
    env = {**os.environ, "OPTSCHED_DATABASE_URL": f"sqlite:///{folder}/g.db", "OPTSCHED_START_WORKERS": "false",
           "OPTSCHED_AUTH": "off"}
    gunicorn = Path(sys.executable).with_name("gunicorn")
    process = subprocess.Popen(
        [str(gunicorn), "--worker-class", "gthread", "--threads", "32", "--workers", "1", "--bind",
         f"127.0.0.1:{port}", "api:create_app()"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if requests.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("gunicorn did not start")
            time.sleep(0.1)
        held = stall(port, 33)
        try:
            return {"stalled": 33, **probe(base, min(probes, 5), timeout_s=5.0)}
        finally:
            for s in held:
                s.close()
    finally:
        os.killpg(process.pid, 9)
        process.wait(10)


def short_body_408(folder: Path) -> float:
    with LiveServer(database=folder / "t.db", log=folder / "t.log", workers=1, threads=4) as server:
        server.start()
        started = time.monotonic()
        with socket.create_connection(("127.0.0.1", server.port), timeout=60) as s:
            s.sendall(b"POST /v1/plans HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 100\r\n\r\n{\"name\":")
            answer = s.recv(200)
        assert b" 408 " in answer.split(b"\r\n")[0], answer
        return round(time.monotonic() - started, 1)


def costs(folder: Path) -> list[tuple[str, str]]:
    """(what, figure) for requests at the default limits, in-process."""
    from api import create_app, shutdown
    from optsched.infra.store import JobState
    from optsched.night import plan_night
    from optsched.service.settings import load_settings

    settings = load_settings({})
    jobs, rows_cap = settings["MAX_JOBS"], settings["MAX_CHART_ROWS"]
    app = create_app({"DATABASE_URL": f"sqlite:///{folder}/c.db", "START_WORKERS": False, "API_TOKEN": None,
                      "AUTH": "off"})
    client, store = app.test_client(), app.extensions["optsched"].store
    out = []
    try:
        big = {"devices": [{"id": f"g{i}", "model": "A100-SXM", "count": 8} for i in range(16)],
               "jobs": [{"id": f"j{i}", "work_hours": 4.0, "parallel_fraction": 0.9} for i in range(jobs)],
               "options": {"time_limit_s": 0.5}}
        started = time.monotonic()
        status = client.post("/v1/plans", json=big, headers={"Prefer": "respond-async"}).status_code
        out.append((f"POST /v1/plans, {jobs:,} jobs x 16 groups (at OPTSCHED_MAX_JOBS)",
                    f"{status} in {time.monotonic() - started:.2f} s"))
        plan = {"workload": "w", "objective_name": "weighted_speedup", "status": "optimal", "objective": 0.0,
                "bound": None, "gap": None, "solve_seconds": 0.0, "weighted_speedup": 0.0, "power_w": 0.0,
                "placements": [{"job": f"j{i}", "priority": "normal", "admitted": True, "speedup": 1.0,
                                "runtime_hours": 4.0, "meets_deadline": None,
                                "allocations": [{"device": f"g{i % 16}", "count": 1, "cap_w": 400.0, "speed": 1.0,
                                                 "work_fraction": 1.0}]} for i in range(jobs)]}
        started = time.monotonic()
        status = client.post("/v1/verify", json={"workload": big, "plan": plan}).status_code
        out.append((f"POST /v1/verify, {jobs:,} placements", f"{status} in {time.monotonic() - started:.2f} s"))

        def finished(queue: dict) -> str:
            params = {"start": "2026-12-01T22:00:00", "hours": 8.0, "preempt": False, "restart_hours": 0.1}
            record, _ = store.create(queue, kind="night", params=params)
            claimed = store.claim(record.id)
            result = plan_night(queue, **params)
            store.finish(record.id, claimed.attempts, JobState.finished, verdict="met" if result.ok else "missed",
                         plan=result.model_dump(mode="json", by_alias=True))
            return record.id

        hostile = {
            "name": "wide",
            "devices": [{"id": "g", "model": "A100-SXM", "count": 3000}],
            "jobs": [{"id": "a", "work_hours": 1.0, "parallel_fraction": 0.99}],
            "options": {"time_limit_s": 5.0},
        }
        wide = finished(hostile)
        started = time.monotonic()
        status = client.get(f"/v1/night-plans/{wide}/gantt.png").status_code
        out.append(("GET gantt.png of the 3,000-device night (was 44 s, +565 MB)",
                    f"{status} (not drawn) in {(time.monotonic() - started) * 1000:.0f} ms"))
        at_cap = {"name": "cap", "devices": [{"id": "g", "model": "A100-SXM", "count": rows_cap}],
                  "jobs": [{"id": f"j{i}", "work_hours": 2.0 + i % 5, "parallel_fraction": 0.95, "max_devices": 8,
                            "release_hours": float(i % 6)} for i in range(120)],
                  "options": {"time_limit_s": 2.0}}
        capped = finished(at_cap)
        rss_before = rss_mb(os.getpid())
        started = time.monotonic()
        response = client.get(f"/v1/night-plans/{capped}/gantt.png")
        out.append(
            (
                f"GET gantt.png at OPTSCHED_MAX_CHART_ROWS ({rows_cap} devices, 120 jobs)",
                f"{response.status_code}, {len(response.data) / 1e6:.1f} MB PNG in {time.monotonic() - started:.1f} s, "
                f"RSS +{(rss_mb(os.getpid()) or 0) - (rss_before or 0):.0f} MB",
            )
        )
        started = time.monotonic()
        night = {"queue": {**hostile, "devices": [{"id": "g", "model": "A100-SXM", "count": 1_000_000}]},
                 "start": "2026-12-01T22:00", "hours": 168.0}
        status = client.post("/v1/night-plans", json=night).status_code
        out.append(
            ("POST /v1/night-plans with count 1,000,000", f"{status} in {(time.monotonic() - started) * 1000:.0f} ms")
        )
        slow = {"workload": {**big, "jobs": big["jobs"][:10], "options": {"time_limit_s": 60.0}},
                "budgets": [1000.0 + i for i in range(100)]}
        started = time.monotonic()
        status = client.post("/v1/frontiers", json=slow).status_code
        out.append(
            ("POST /v1/frontiers, 100 budgets x 60 s", f"{status} in {(time.monotonic() - started) * 1000:.0f} ms")
        )
    finally:
        shutdown(app)
    return out


def render(waitress: list[dict], gunicorn: dict, wait_408: float, cost_rows: list[tuple[str, str]], meta: str) -> str:
    lines = [SECTION, "", "Stalled connections (each sends half its headers, then nothing) against `optsched serve`"
             " (waitress, 32 application threads, OPTSCHED_MAX_CONNECTIONS 1,000), /healthz probed one request after "
             "another during the attack:", "",
             "| server | stalled connections | still held by the server | /healthz p50 | p99 | max | failed probes |",
             "|---|---|---|---|---|---|---|"]
    for row in waitress:
        lines.append(f"| optsched serve (waitress) | {row['stalled']} | {row.get('held', '-')} | {row['p50_ms']} ms | "
                     f"{row['p99_ms']} ms | {row['max_ms']} ms | {row['failed']} |")
    lines.append(f"| gunicorn gthread, 32 threads (before) | {gunicorn['stalled']} | - | {gunicorn['p50_ms']} ms | "
                 f"{gunicorn['p99_ms']} ms | {gunicorn['max_ms']} ms | {gunicorn['failed']} of 5 (5 s timeout) |")
    lines += ["", f"HTTP process RSS after the largest attack: {waitress[-1].get('http_rss_mb')} MB. A body shorter "
              f"than its Content-Length is answered 408 after {wait_408} s (OPTSCHED_READ_TIMEOUT_S = 20; before: no "
              "answer for more than 75 s).", "",
              "Requests at the default limits (in-process, Flask test client):", "",
              "| request | answer |", "|---|---|"]
    lines += [f"| {what} | {figure} |" for what, figure in cost_rows]
    lines += ["", meta, ""]
    return "\n".join(lines)


def write_section(text: str) -> None:
    current = RESULTS_MD.read_text() if RESULTS_MD.exists() else ""
    pattern = re.compile(re.escape(SECTION) + r".*?(?=\n## |\Z)", re.S)
    updated = pattern.sub(lambda _m: text.rstrip("\n") + "\n", current) if SECTION in current else (
        current.rstrip("\n") + "\n\n" + text)
    RESULTS_MD.write_text(updated)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stalled", default="150,500,900")
    parser.add_argument("--probes", type=int, default=200)
    args = parser.parse_args()
    counts = [int(c) for c in args.stalled.split(",")]
    load = os.getloadavg()[0]
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        waitress = waitress_attack(folder, counts, args.probes)
        gunicorn = gunicorn_attack(folder, args.probes)
        wait_408 = short_body_408(folder)
        cost_rows = costs(folder)
    meta = (f"`python -m bench.hostile --stalled {args.stalled} --probes {args.probes}` - "
            f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {time.monotonic() - started:.0f} s, load average {load:.2f} at "
            f"the start; {os.cpu_count()} cores shared with other jobs, loopback only.")
    text = render(waitress, gunicorn, wait_408, cost_rows, meta)
    print(text)
    write_section(text)


if __name__ == "__main__":
    main()
