"""Throughput of the scaled deployment on this machine: plans per minute with 1, 2 and 4 RQ workers, and the same
through the embedded process pool; writes bench/results/scale.md.

The mix: SMALL generated workloads (`optsched.testing.instances.generate("S", seed)`: 20 jobs, 4 device groups, tens of
milliseconds to solve) and MEDIUM shipped ones (models/workloads/demo.json and night-queue.json planned as
workloads: 15-61 jobs, seconds to solve), interleaved in a fixed order. Each configuration gets a fresh store and
warm workers (one small plan per worker solved before the clock starts); then every row is created and submitted
at once, and the clock runs from the first submit to the last `finished_at`. Each configuration runs `--repeat`
times, interleaved with the others; the median run is reported with the rates of all.

- RQ: `optsched worker --concurrency N` as a subprocess, PostgreSQL (a throwaway database) and Redis (a
  throwaway queue name on OPTSCHED_BENCH_REDIS_URL, default redis://127.0.0.1:6379/14), submitted with `RQQueue`.
- embedded: `ProcessPool(workers=N)` on a SQLite file, as `optsched serve` runs it.

Per plan it also records the service time (`finished_at - started_at`: claim, solve, result write and, for RQ, the
fork of the work horse) beside the solver's own `solve_seconds`: their difference is the queue's own cost per plan.

    .venv/bin/python -m bench.scale [--small 24] [--medium 6] [--workers 1 2 4] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import psycopg
from redis import Redis

from optsched.infra.pool import ProcessPool
from optsched.infra.queue import SolveQueue
from optsched.infra.rq.queue import RQQueue
from optsched.infra.store import JobState, PlanStore
from optsched.service.kinds import RUNNER
from optsched.testing.instances import generate

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "scale.md"
WORKLOADS = ROOT / "models" / "workloads"
MEDIUM_FILES = ("demo.json", "night-queue.json")
PG_ADMIN = os.environ.get("OPTSCHED_BENCH_PG_ADMIN", "postgresql://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("OPTSCHED_BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
OPTSCHED = Path(sys.executable).with_name("optsched")
TIMEOUT_S = 900


@dataclass(frozen=True)
class Item:
    cls: str  # "small" or "medium"
    name: str
    document: dict


@dataclass
class Run:
    queue: str
    workers: int
    plans: int
    wall_s: float
    service_s: dict[str, list[float]]
    solve_s: dict[str, list[float]]
    wait_s: list[float]
    spread: tuple[float, ...] = ()  # plans/min of every repetition of this configuration

    @property
    def per_minute(self) -> float:
        return 60 * self.plans / self.wall_s

    @property
    def beyond_solve_ms(self) -> float:
        """Worker time per plan not spent in the solver (dequeue, fork, claim, writes, idle tail), in ms."""
        solving = sum(sum(v) for v in self.solve_s.values())
        return 1000 * (self.wall_s * self.workers - solving) / self.plans


def the_mix(small: int, medium: int) -> list[Item]:
    items = [
        Item("small", f"S-seed{seed}", generate("S", seed).model_dump(mode="json", exclude_none=True))
        for seed in range(small)
    ]
    for i in range(medium):
        name = MEDIUM_FILES[i % len(MEDIUM_FILES)]
        items.append(Item("medium", name, json.loads((WORKLOADS / name).read_text())))
    random.Random(7).shuffle(items)
    return items


def warm_up(store: PlanStore, queue: SolveQueue, workers: int) -> None:
    """One small plan per worker, so that no worker's start-up is timed."""
    ids = []
    for seed in range(workers):
        record, _ = store.create(generate("S", 1000 + seed).model_dump(mode="json", exclude_none=True))
        queue.submit(record.id)
        ids.append(record.id)
    wait_all(store, ids)


def wait_all(store: PlanStore, ids: list[str]) -> list:
    deadline = time.monotonic() + TIMEOUT_S
    pending = set(ids)
    while pending:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{len(pending)} plan(s) not finished after {TIMEOUT_S} s")
        for plan_id in list(pending):
            if store.get(plan_id).status.final:
                pending.discard(plan_id)
        time.sleep(0.05)
    return [store.get(i) for i in ids]


def measure(store: PlanStore, queue: SolveQueue, items: list[Item], label: str, workers: int) -> Run:
    warm_up(store, queue, workers)
    records = [store.create(item.document)[0] for item in items]
    started = datetime.now(UTC)
    for record in records:
        queue.submit(record.id)
    done = wait_all(store, [r.id for r in records])
    bad = [r for r in done if r.status in (JobState.failed, JobState.cancelled) or r.verdict == "no_solution"]
    if bad:
        raise RuntimeError(f"{label}: {len(bad)} plan(s) did not solve: {bad[0].outcome} {bad[0].error}")
    wall = (max(r.finished_at for r in done) - started).total_seconds()
    service: dict[str, list[float]] = {"small": [], "medium": []}
    solve: dict[str, list[float]] = {"small": [], "medium": []}
    for item, record in zip(items, done, strict=True):
        service[item.cls].append((record.finished_at - record.started_at).total_seconds())
        solve[item.cls].append(record.plan["solve_seconds"])
    waits = [(r.started_at - r.submitted_at).total_seconds() for r in done]
    return Run(label, workers, len(items), wall, service, solve, waits)


def rq_run(items: list[Item], workers: int) -> Run:
    token = uuid.uuid4().hex[:8]
    database, queue_name = f"optsched_bench_{token}", f"optsched-bench-{token}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{database}"')
    user = PG_ADMIN.split("//", 1)[1].split("@", 1)[0]
    host = PG_ADMIN.split("@", 1)[1].split("/", 1)[0]
    url = f"postgresql+psycopg://{user}@{host}/{database}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPTSCHED_")}
    env.update(OPTSCHED_DATABASE_URL=url, OPTSCHED_QUEUE_URL=REDIS_URL, OPTSCHED_QUEUE_NAME=queue_name)
    store = PlanStore(url)
    log = Path(tempfile.mkdtemp(prefix="optsched-bench-")) / "worker.log"
    with log.open("wb") as out:
        worker = subprocess.Popen([str(OPTSCHED), "worker", "--concurrency", str(workers)], env=env, stdout=out,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    queue = RQQueue(store, REDIS_URL, runner=RUNNER, queue_name=queue_name)
    queue.start()
    try:
        return measure(store, queue, items, "RQ workers (PostgreSQL + Redis)", workers)
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        try:
            worker.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(5)
        queue.stop()
        _clean_redis(queue_name, _row_ids(store))
        store.close()
        with psycopg.connect(PG_ADMIN, autocommit=True) as c:
            c.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def _clean_redis(queue_name: str, plan_ids: list[str]) -> None:
    """Delete the keys this run made: its queue's, its workers' and its jobs' (job ids start with the row ids)."""
    r = Redis.from_url(REDIS_URL)
    for member in r.smembers(f"rq:workers:{queue_name}"):
        r.srem("rq:workers", member)
    r.srem("rq:queues", f"rq:queue:{queue_name}")
    for key in r.scan_iter(match="rq:worker:*", count=1000):
        if queue_name.encode() in (r.hget(key, "queues") or b""):
            r.delete(key)
    for pattern in [f"*{queue_name}*", *(f"*{plan_id}*" for plan_id in plan_ids)]:
        for key in r.scan_iter(match=pattern, count=1000):
            r.delete(key)
    r.close()


def _row_ids(store: PlanStore) -> list[str]:
    ids, cursor = [], None
    while True:
        page, cursor = store.list(limit=100, cursor=cursor)
        ids += [r.id for r in page]
        if cursor is None:
            return ids


def api_cost(count: int = 200) -> dict[str, float]:
    """Milliseconds of API process time per POST (respond-async) and per GET of a plan with the RQ queue: the
    Flask app in this process (no HTTP server, so add ~1 ms per request for the HTTP server), PostgreSQL and Redis."""
    from api import create_app, services, shutdown

    token = uuid.uuid4().hex[:8]
    database, queue_name = f"optsched_bench_{token}", f"optsched-bench-{token}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{database}"')
    user = PG_ADMIN.split("//", 1)[1].split("@", 1)[0]
    host = PG_ADMIN.split("@", 1)[1].split("/", 1)[0]
    app = create_app({"DATABASE_URL": f"postgresql+psycopg://{user}@{host}/{database}", "QUEUE_URL": REDIS_URL,
                      "QUEUE_NAME": queue_name, "QUEUE_SIZE": 100_000, "API_TOKEN": None, "AUTH": "off"})
    client = app.test_client()
    body = generate("S", 0).model_dump(mode="json", exclude_none=True)
    try:
        started, started_wall = time.process_time(), time.perf_counter()
        locations = [client.post("/v1/plans", json=body, headers={"Prefer": "respond-async"}).headers["Location"]
                     for _ in range(count)]
        post_ms = 1000 * (time.process_time() - started) / count
        post_wall_ms = 1000 * (time.perf_counter() - started_wall) / count
        started_wall = time.perf_counter()
        started = time.process_time()
        for location in locations:
            client.get(location)
        get_ms = 1000 * (time.process_time() - started) / count
        get_wall_ms = 1000 * (time.perf_counter() - started_wall) / count
    finally:
        store = services(app).store
        _clean_redis(queue_name, _row_ids(store))
        shutdown(app)
        with psycopg.connect(PG_ADMIN, autocommit=True) as c:
            c.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    return {"post_cpu_ms": post_ms, "post_wall_ms": post_wall_ms, "get_cpu_ms": get_ms, "get_wall_ms": get_wall_ms,
            "count": count}


def embedded_run(items: list[Item], workers: int) -> Run:
    folder = Path(tempfile.mkdtemp(prefix="optsched-bench-"))
    store = PlanStore(f"sqlite:///{folder}/plans.db")
    pool = ProcessPool(store, workers=workers, queue_size=10_000, runner=RUNNER)
    pool.start()
    try:
        return measure(store, pool, items, "embedded pool (SQLite)", workers)
    finally:
        pool.stop()
        store.close()


def _stats(values: list[float]) -> str:
    return f"{statistics.mean(values):.3f}" if values else "-"


def _table(runs: list[Run]) -> list[str]:
    lines = [
        "| queue | workers | plans | wall s | plans/min | plans/min of each run | small: service s / solve s "
        "| medium: service s / solve s | worker time per plan beyond the solve, ms | mean wait in queue s |",
        "|---|---:|---:|---:|---:|---|---|---|---:|---:|",
    ]
    for run in runs:
        lines.append(
            f"| {run.queue} | {run.workers} | {run.plans} | {run.wall_s:.1f} | **{run.per_minute:.1f}** | "
            f"{', '.join(f'{v:.0f}' for v in run.spread)} | "
            f"{_stats(run.service_s['small'])} / {_stats(run.solve_s['small'])} | "
            f"{_stats(run.service_s['medium'])} / {_stats(run.solve_s['medium'])} | "
            f"{run.beyond_solve_ms:.0f} | {statistics.mean(run.wait_s):.1f} |"
        )
    return lines


def report(runs: list[Run], small_runs: list[Run], items: list[Item], load: tuple[float, float],
           api: dict[str, float] | None) -> str:
    small = sum(1 for i in items if i.cls == "small")
    medium = len(items) - small
    lines = [
        "# Scale-out throughput (bench/scale.py)",
        "",
        f"- date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        f"- machine: {os.cpu_count()} cores, {platform.system()}, Python {platform.python_version()}; 1-minute load "
        f"average {load[0]:.1f} at the start, {load[1]:.1f} at the end (the machine is shared with other jobs)",
        "- command: `.venv/bin/python -m bench.scale`",
        f"- mix: {len(items)} plans, {small} small (`generate(\"S\", seed)`: 20 jobs, 4 device groups) and {medium} "
        f"medium ({', '.join(MEDIUM_FILES)} planned as workloads), interleaved; submitted all at once after a "
        "warm-up; the clock runs from the first submit to the last `finished_at`",
        "- RQ: `optsched worker --concurrency N` (one fork per solve), PostgreSQL 15 and Redis 7 on this machine; "
        "embedded: `ProcessPool(workers=N)` on SQLite, as `optsched serve` runs it; one HiGHS thread per solve",
        "",
        "## The mix",
        "",
        *_table(runs),
        "",
        f"## Small workloads only ({small_runs[0].plans if small_runs else 0} plans): the queue's own cost per plan",
        "",
        *_table(small_runs),
    ]
    if api is not None:
        lines += [
            "",
            f"## The API's own cost with the RQ queue ({api['count']} requests of each kind)",
            "",
            f"POST /v1/plans (`Prefer: respond-async`, a small workload: validate, insert into PostgreSQL, enqueue "
            f"on Redis): {api['post_cpu_ms']:.1f} ms of CPU per request ({api['post_wall_ms']:.1f} ms wall); "
            "GET /v1/plans/{id}: "
            f"{api['get_cpu_ms']:.1f} ms of CPU ({api['get_wall_ms']:.1f} ms wall). Measured in-process with the Flask "
            "test client (no HTTP server: an HTTP server adds about 1 ms per request).",
        ]
    lines += [
        "",
        "`service s` is a row's `finished_at - started_at` (the claim, the solve and the result write, in the solving "
        "process), `solve s` the planner's own `solve_seconds`, both means over the plans of each class. `worker time "
        "per plan beyond the solve` is (wall x workers - total solve seconds) / plans: what each plan costs a worker "
        "besides the solver (dequeue, for RQ the fork of a work horse, the store writes, and idle time at the end of "
        "the run); with more workers than cores it also counts the time solves wait for a core.",
    ]
    return "\n".join(lines) + "\n"


def repeated(items: list[Item], workers_list: list[int], repeat: int, title: str) -> list[Run]:
    """Every configuration `repeat` times, interleaved (so that a burst of load elsewhere hits them alike); for each,
    the run with the median plans per minute, carrying the rates of all its runs."""
    results: dict[tuple[str, int], list[Run]] = {}
    for round_ in range(repeat):
        for workers in workers_list:
            for run in (rq_run, embedded_run):
                result = run(items, workers)
                print(f"{title} round {round_ + 1}: {result.queue}, {workers} worker(s): {result.per_minute:.1f} "
                      f"plans/min ({result.plans} in {result.wall_s:.1f} s)", flush=True)
                results.setdefault((run.__name__, workers), []).append(result)
    chosen = []
    for runs in results.values():
        ordered = sorted(runs, key=lambda r: r.per_minute)
        median = ordered[len(ordered) // 2]
        median.spread = tuple(r.per_minute for r in runs)
        chosen.append(median)
    return chosen


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=24)
    parser.add_argument("--medium", type=int, default=6)
    parser.add_argument("--small-only", type=int, default=60, help="plans in the small-only runs (0: none)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each configuration (the median is kept)")
    parser.add_argument("--no-write", action="store_true", help="print the table only")
    parser.add_argument("--no-api", action="store_true", help="skip the API cost measurement")
    args = parser.parse_args(argv)
    items = the_mix(args.small, args.medium)
    load_start = os.getloadavg()[0]
    runs = repeated(items, args.workers, args.repeat, "mix")
    small_runs = []
    if args.small_only:
        small_runs = repeated(the_mix(args.small_only, 0), sorted({1, min(2, max(args.workers))}), args.repeat,
                              "small only")
    api = None if args.no_api else api_cost()
    if api is not None:
        print(f"API: POST {api['post_cpu_ms']:.1f} ms CPU, GET {api['get_cpu_ms']:.1f} ms CPU", flush=True)
    text = report(runs, small_runs, items, (load_start, os.getloadavg()[0]), api)
    print(text)
    if not args.no_write:
        RESULTS.write_text(text)


if __name__ == "__main__":
    main()
