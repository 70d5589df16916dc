"""REST service latency and throughput beside the same plans made in-process (the ratio is the service's overhead).

Starts `optsched serve` on a free port with a throwaway SQLite file, sends the demo workload (or tiny.json when
one in-process demo solve takes over 2 s, to keep the run short) COUNT times at concurrency 1, 4 and 16, and
writes bench/results/api_latency.md. An extra run with the other workload follows (tiny.json shows the
service's own cost best, as its solve takes milliseconds).
Each request is timed from POST to the finished plan: the POST waits OPTSCHED_SYNC_WAIT_S for the solve
(201), and a 202 is polled until final.

    .venv/bin/python -m bench.api_latency [--count N] [--no-extra] [--workers N]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import requests

import optsched
from optsched.service.kinds import KINDS, final_statuses

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = ROOT / "models" / "workloads"
RESULTS = ROOT / "bench" / "results" / "api_latency.md"
CONCURRENCY = (1, 4, 16)
DEMO_BUDGET_S = 2.0
DEFAULT_COUNT = {"demo.json": 16, "tiny.json": 48}
FINAL = set(final_statuses(KINDS["plan"]))


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def choose_workload() -> tuple[Path, str]:
    demo = WORKLOADS / "demo.json"
    started = time.perf_counter()
    optsched.plan(demo, threads=1)
    seconds = time.perf_counter() - started
    if seconds <= DEMO_BUDGET_S:
        return demo, f"demo.json (one in-process solve took {seconds:.2f} s)"
    return WORKLOADS / "tiny.json", (
        f"tiny.json, because one in-process demo solve took {seconds:.2f} s > {DEMO_BUDGET_S:g} s"
    )


def _timed_plan(workload: dict) -> float:
    started = time.perf_counter()
    result = optsched.plan(workload, threads=1)
    assert result.feasible, result.status
    return time.perf_counter() - started


def in_process(workload: dict, count: int) -> list[float]:
    """Sequential optsched.plan calls in this process, as the service's workers make them (threads=1)."""
    _timed_plan(workload)  # warm imports and caches, as the service's workers are
    return [_timed_plan(workload) for _ in range(count)]


def in_process_pool(workload: dict, count: int, processes: int) -> float:
    """Plans per second of optsched.plan in `processes` local processes: what the machine does without HTTP."""
    with ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(_timed_plan, [workload] * processes))  # warm every process
        started = time.perf_counter()
        list(pool.map(_timed_plan, [workload] * count))
        return count / (time.perf_counter() - started)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(folder: Path, workers: int | None) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "OPTSCHED_DATABASE_URL": f"sqlite:///{folder}/plans.db", "OPTSCHED_QUEUE_SIZE": "1000"}
    env.pop("OPTSCHED_API_TOKEN", None)
    env["OPTSCHED_AUTH"] = "off"
    command = [str(Path(sys.executable).with_name("optsched")), "serve", "--port", str(port)]
    if workers:
        command += ["--workers", str(workers)]
    log = (folder / "server.log").open("wb")
    process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited: {(folder / 'server.log').read_text()}")
        try:
            if requests.get(f"{base}/readyz", timeout=2).status_code == 200:
                return process, base
        except requests.ConnectionError:
            pass
        time.sleep(0.1)
    os.killpg(process.pid, signal.SIGKILL)
    raise RuntimeError("server not ready in 60 s")


def one_request(session: requests.Session, base: str, workload: dict) -> tuple[float, float]:
    """(seconds from POST to the finished plan, the solve's own seconds as the plan reports them)."""
    started = time.perf_counter()
    response = session.post(f"{base}/v1/plans", json=workload, timeout=120)
    body = response.json()
    if response.status_code == 202:
        location = response.headers["Location"]
        while body["status"] not in FINAL:
            time.sleep(0.01)
            body = session.get(base + location, timeout=30).json()
    elapsed = time.perf_counter() - started
    if body["status"] not in ("optimal", "time_limit"):
        raise RuntimeError(f"plan ended {body['status']}: {body.get('error')}")
    return elapsed, body["plan"]["solve_seconds"]


def over_http(base: str, workload: dict, count: int, concurrency: int) -> tuple[list[tuple[float, float]], float]:
    sessions = [requests.Session() for _ in range(concurrency)]
    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        timings = list(pool.map(lambda i: one_request(sessions[i % concurrency], base, workload), range(count)))
    return timings, time.perf_counter() - started


@dataclass
class Result:
    path: Path
    why: str
    count: int
    local_p50: float
    local_p99: float
    local_rate: float
    pool_rate: float
    rows: list[tuple] = field(default_factory=list)


def measure(path: Path, why: str, count: int, workers: int, explicit_workers: int | None) -> Result:
    workload = json.loads(path.read_text())
    local = in_process(workload, count)
    result = Result(
        path,
        why,
        count,
        percentile(local, 50) * 1e3,
        percentile(local, 99) * 1e3,
        len(local) / sum(local),
        in_process_pool(workload, count, workers),
    )
    print(
        f"{path.name}: in-process p50 {result.local_p50:.1f} ms, {result.local_rate:.2f} plans/s sequential, "
        f"{result.pool_rate:.2f} plans/s in {workers} processes"
    )
    with tempfile.TemporaryDirectory() as folder:
        process, base = start_server(Path(folder), explicit_workers)
        try:
            over_http(base, workload, 2 * workers, workers)  # warm-up: workers started and imported
            for concurrency in CONCURRENCY:
                timings, wall = over_http(base, workload, count, concurrency)
                latencies = [t for t, _ in timings]
                p50, p99 = percentile(latencies, 50) * 1e3, percentile(latencies, 99) * 1e3
                beyond = percentile([t - solve for t, solve in timings], 50) * 1e3
                rate = count / wall
                direct = result.local_rate if concurrency == 1 else result.pool_rate
                result.rows.append((concurrency, count, p50, p99, beyond, rate, p50 / result.local_p50, rate / direct))
                print(
                    f"  concurrency {concurrency:>2}: p50 {p50:8.1f} ms  p99 {p99:8.1f} ms  "
                    f"beyond the solve {beyond:7.1f} ms  {rate:6.2f} plans/s"
                )
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(30)
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--count",
        type=int,
        default=None,
        help="requests per concurrency level (default: 48 for tiny.json, 16 for demo.json)",
    )
    parser.add_argument(
        "--no-extra",
        action="store_true",
        help="skip the extra run with the other workload (tiny.json after demo.json or the reverse)",
    )
    parser.add_argument("--workers", type=int, default=None, help="solver processes (default: one per core)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)

    workers = args.workers or os.cpu_count() or 1
    load_before = os.getloadavg()[0]
    path, why = choose_workload()
    results = [measure(path, why, args.count or DEFAULT_COUNT[path.name], workers, args.workers)]
    if not args.no_extra:
        other = "tiny.json" if path.name == "demo.json" else "demo.json"
        purpose = "a solve of milliseconds shows the overhead" if other == "tiny.json" else "the demo"
        why = f"{other} (extra run: {purpose})"
        results.append(measure(WORKLOADS / other, why, DEFAULT_COUNT[other], workers, args.workers))
    report = render(results, workers, (load_before, os.getloadavg()[0]))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(report)
    print(report)


def render(results: list[Result], workers: int, load: tuple[float, float]) -> str:
    cpu = platform.processor() or "unknown"
    if Path("/proc/cpuinfo").exists():
        models = [
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ]
        cpu = models[0] if models else cpu
    lines = [
        "# REST service latency (bench/api_latency.py)",
        "",
        f"- date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        f"- machine: {os.cpu_count()} cores ({cpu}), {platform.system()}, Python {platform.python_version()}; "
        f"shared with other jobs: 1-minute load average {load[0]:.1f} at the start, {load[1]:.1f} at the end",
        f"- command: `.venv/bin/python -m bench.api_latency{' ' + ' '.join(sys.argv[1:]) if sys.argv[1:] else ''}`",
        f"- server: `optsched serve` (gunicorn, one HTTP worker with 32 threads), {workers} solver processes, "
        "SQLite in a temporary folder, OPTSCHED_SYNC_WAIT_S 2 s",
        "- each request is timed from POST to the finished plan (201 at once, or 202 then polling `Location` "
        "every 10 ms); the client runs on the same machine",
        "- in-process: `optsched.plan(workload, threads=1)` (as the workers call it), sequentially in the "
        f"benchmark process, and in {workers} local processes for the throughput at concurrency > 1",
        "",
    ]
    for r in results:
        lines += [
            f"## {r.why}",
            "",
            f"In-process: p50 {r.local_p50:.1f} ms, p99 {r.local_p99:.1f} ms, {r.local_rate:.2f} plans/s sequential, "
            f"{r.pool_rate:.2f} plans/s in {workers} processes.",
            "",
            "| concurrency | requests | p50 ms | p99 ms | p50 beyond the solve ms | plans/s "
            "| p50 / in-process p50 | plans/s / in-process plans/s |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for concurrency, count, p50, p99, beyond, rate, latency_ratio, throughput_ratio in r.rows:
            lines.append(
                f"| {concurrency} | {count} | {p50:.1f} | {p99:.1f} | {beyond:.1f} | {rate:.2f} | "
                f"{latency_ratio:.2f} | {throughput_ratio:.2f} |"
            )
        lines.append("")
    lines += [
        "`p50 beyond the solve` is the request's time minus the solve time the plan reports (`solve_seconds`): at "
        "concurrency 1 it is the service's own cost per plan (HTTP, JSON, validation, three store writes, the pipe "
        "to a worker process, the polling step of a 202), free of the solve's own variance; above that it adds the "
        "wait in the queue. The latency ratio at concurrency 1 is the same cost relative to the solve. Above the "
        "number of solver processes, requests queue, so latency grows with concurrency by design; the throughput "
        "ratio compares with the in-process rate at the same parallelism (sequential at concurrency 1, the process "
        "pool above).",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
