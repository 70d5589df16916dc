"""Load test on loopback: a fixed request mix at concurrency 32 against `optsched serve` for 60 s.

Promise 5 of bench/results/reliability.md: zero errors other than deliberate 503s (queue full, answered with
Retry-After, which the clients honour), the p99 latency of small synchronous plans, and /healthz answering
while every solver process is busy.

The mix (fixed weights, each client draws from its own seeded generator):
  40 %  POST /v1/plans, a small workload (tiny.json with a varied job), synchronous: timed from POST to the
        finished plan (201 at once, or 202 then polling `Location`), the figure users wait for
  10 %  POST /v1/plans, the demo workload (time limit 2 s), `Prefer: respond-async`: keeps the workers busy
  20 %  GET /v1/plans/{id} of a plan this client created
  10 %  GET /v1/plans?limit=20
  10 %  POST /v1/verify (tiny.json and a plan of it)
   5 %  GET /healthz
   5 %  GET /readyz
`--mix small` drops the demo solves (small plans then do not wait behind 2-s solves in the FIFO queue).
A prober outside the mix GETs /healthz every 100 ms; a monitor counts the plans solving every 250 ms, so
/healthz latency is also reported for the moments when every solver process was busy.

    .venv/bin/python -m bench.load [--seconds 60] [--concurrency 32] [--workers N] [--mix full|small] [--json F]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import requests

import optsched
from optsched.service.kinds import KINDS, final_statuses
from tests.support.server import LiveServer, rss_mb

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = ROOT / "models" / "workloads"
FINAL = set(final_statuses(KINDS["plan"]))
MIXES = {
    "full": (
        ("small_sync_plan", 40),
        ("demo_async_plan", 10),
        ("get_plan", 20),
        ("list_plans", 10),
        ("verify", 10),
        ("healthz", 5),
        ("readyz", 5),
    ),
    # The same without the demo solves: small plans do not queue behind 2-s solves.
    "small": (
        ("small_sync_plan", 50),
        ("get_plan", 20),
        ("list_plans", 10),
        ("verify", 10),
        ("healthz", 5),
        ("readyz", 5),
    ),
}


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


@dataclass
class LoadResult:
    seconds: float
    concurrency: int
    workers: int
    http_threads: int
    requests: Counter = field(default_factory=Counter)  # kind -> sent
    statuses: Counter = field(default_factory=Counter)  # "kind status" -> count
    errors: list[str] = field(default_factory=list)
    deliberate_503: int = 0
    small_plan_ms: list[float] = field(default_factory=list)
    small_plan_201: int = 0
    small_plan_queue_ms: list[float] = field(default_factory=list)  # submitted_at -> started_at
    small_plan_solve_ms: list[float] = field(default_factory=list)  # started_at -> finished_at
    healthz_ms: list[float] = field(default_factory=list)
    healthz_all_busy_ms: list[float] = field(default_factory=list)
    all_busy_share: float = 0.0
    http_rss_mb: tuple[float | None, float | None] = (None, None)

    def summary(self) -> dict[str, Any]:
        def ms(values: list[float], q: float) -> float | None:
            value = percentile(values, q)
            return None if value is None else round(value, 1)

        return {
            "seconds": round(self.seconds, 1),
            "concurrency": self.concurrency,
            "workers": self.workers,
            "http_threads": self.http_threads,
            "requests": sum(self.requests.values()),
            "requests_by_kind": dict(self.requests),
            "statuses": dict(self.statuses),
            "errors": len(self.errors),
            "error_examples": self.errors[:10],
            "deliberate_503": self.deliberate_503,
            "small_plans": len(self.small_plan_ms),
            "small_plans_201": self.small_plan_201,
            "small_plan_p50_ms": ms(self.small_plan_ms, 50),
            "small_plan_p99_ms": ms(self.small_plan_ms, 99),
            "small_plan_max_ms": ms(self.small_plan_ms, 100),
            "small_plan_queue_p50_ms": ms(self.small_plan_queue_ms, 50),
            "small_plan_queue_p99_ms": ms(self.small_plan_queue_ms, 99),
            "small_plan_solve_p50_ms": ms(self.small_plan_solve_ms, 50),
            "small_plan_solve_p99_ms": ms(self.small_plan_solve_ms, 99),
            "healthz_probes": len(self.healthz_ms),
            "healthz_p50_ms": ms(self.healthz_ms, 50),
            "healthz_p99_ms": ms(self.healthz_ms, 99),
            "healthz_max_ms": ms(self.healthz_ms, 100),
            "healthz_probes_all_workers_busy": len(self.healthz_all_busy_ms),
            "healthz_all_busy_p99_ms": ms(self.healthz_all_busy_ms, 99),
            "healthz_all_busy_max_ms": ms(self.healthz_all_busy_ms, 100),
            "all_workers_busy_share": round(self.all_busy_share, 3),
            "http_process_rss_mb": [None if v is None else round(v, 1) for v in self.http_rss_mb],
        }


class Load:
    def __init__(self, base: str, seconds: float, concurrency: int, workers: int, http_threads: int, seed: int,
                 mix: str = "full"):
        self.base = base
        self.mix = MIXES[mix]
        self.until = time.monotonic() + seconds
        self.concurrency = concurrency
        self.workers = workers
        self.seed = seed
        self.result = LoadResult(seconds, concurrency, workers, http_threads)
        self.lock = threading.Lock()
        self.busy = threading.Event()  # set while every solver process holds a plan
        self.tiny = json.loads((WORKLOADS / "tiny.json").read_text())
        self.demo = json.loads((WORKLOADS / "demo.json").read_text())
        self.demo["options"] = {"time_limit_s": 2.0, "mip_gap": 0.0}
        self.verify_body = {"workload": self.tiny, "plan": optsched.plan(self.tiny).model_dump(mode="json")}

    # -- bookkeeping -------------------------------------------------------------------------------------

    def count(self, kind: str, status: int | str) -> None:
        with self.lock:
            self.result.requests[kind] += 1
            self.result.statuses[f"{kind} {status}"] += 1

    def error(self, kind: str, what: str) -> None:
        with self.lock:
            self.result.errors.append(f"{kind}: {what}")

    # -- the clients ---------------------------------------------------------------------------------------

    def client(self, number: int) -> None:
        rng = random.Random(f"{self.seed}-{number}")
        session = requests.Session()
        mine: list[str] = []
        kinds = [k for k, _ in self.mix]
        weights = [w for _, w in self.mix]
        while time.monotonic() < self.until:
            kind = rng.choices(kinds, weights)[0]
            try:
                getattr(self, kind)(session, rng, mine)
            except requests.RequestException as exc:
                self.count(kind, type(exc).__name__)
                self.error(kind, f"{type(exc).__name__}: {exc}")

    def _queue_full(self, kind: str, response: requests.Response) -> bool:
        """A 503 from the full queue: deliberate; the client waits Retry-After (at most 2 s) as told."""
        if response.status_code != 503:
            return False
        body = response.json()
        if body.get("type") != "urn:optsched:problem:queue-full" or "Retry-After" not in response.headers:
            self.error(kind, f"503 that is not queue-full: {response.text[:200]}")
            return True
        with self.lock:
            self.result.deliberate_503 += 1
        time.sleep(min(2.0, float(response.headers["Retry-After"])))
        return True

    def small_sync_plan(self, session, rng, mine) -> None:
        workload = copy.deepcopy(self.tiny)
        workload["name"] = f"tiny-{rng.randrange(10**9)}"
        workload["jobs"][1]["work_hours"] = rng.choice([1, 2, 3, 4])
        started = time.perf_counter()
        response = session.post(f"{self.base}/v1/plans", json=workload, timeout=60)
        self.count("small_sync_plan", response.status_code)
        if self._queue_full("small_sync_plan", response):
            return
        if response.status_code not in (201, 202):
            self.error("small_sync_plan", f"{response.status_code} {response.text[:200]}")
            return
        body = response.json()
        while body["status"] not in FINAL:
            time.sleep(0.02)
            body = session.get(self.base + response.headers["Location"], timeout=60).json()
        elapsed_ms = (time.perf_counter() - started) * 1e3
        if body["status"] not in ("optimal", "time_limit"):
            self.error("small_sync_plan", f"ended {body['status']}: {body.get('error')}")
            return
        submitted, started, finished = (
            datetime.fromisoformat(body[k]) for k in ("submitted_at", "started_at", "finished_at")
        )
        with self.lock:
            self.result.small_plan_ms.append(elapsed_ms)
            self.result.small_plan_201 += response.status_code == 201
            self.result.small_plan_queue_ms.append((started - submitted).total_seconds() * 1e3)
            self.result.small_plan_solve_ms.append((finished - started).total_seconds() * 1e3)
        mine.append(body["id"])

    def demo_async_plan(self, session, rng, mine) -> None:
        response = session.post(
            f"{self.base}/v1/plans", json=self.demo, headers={"Prefer": "respond-async"}, timeout=60
        )
        self.count("demo_async_plan", response.status_code)
        if self._queue_full("demo_async_plan", response):
            return
        if response.status_code != 202:
            self.error("demo_async_plan", f"{response.status_code} {response.text[:200]}")
            return
        mine.append(response.json()["id"])

    def get_plan(self, session, rng, mine) -> None:
        if not mine:
            return self.list_plans(session, rng, mine)
        response = session.get(f"{self.base}/v1/plans/{rng.choice(mine)}", timeout=60)
        self.count("get_plan", response.status_code)
        if response.status_code != 200:
            self.error("get_plan", f"{response.status_code} {response.text[:200]}")
        elif response.json()["status"] == "failed":
            self.error("get_plan", f"a plan failed: {response.json().get('error')}")

    def list_plans(self, session, rng, mine) -> None:
        response = session.get(f"{self.base}/v1/plans", params={"limit": 20}, timeout=60)
        self.count("list_plans", response.status_code)
        if response.status_code != 200:
            self.error("list_plans", f"{response.status_code} {response.text[:200]}")

    def verify(self, session, rng, mine) -> None:
        response = session.post(f"{self.base}/v1/verify", json=self.verify_body, timeout=60)
        self.count("verify", response.status_code)
        if response.status_code != 200 or response.json()["violations"]:
            self.error("verify", f"{response.status_code} {response.text[:200]}")

    def healthz(self, session, rng, mine) -> None:
        response = session.get(f"{self.base}/healthz", timeout=60)
        self.count("healthz", response.status_code)
        if response.status_code != 200:
            self.error("healthz", f"{response.status_code}")

    def readyz(self, session, rng, mine) -> None:
        response = session.get(f"{self.base}/readyz", timeout=60)
        self.count("readyz", response.status_code)
        if response.status_code != 200:
            self.error("readyz", f"{response.status_code} {response.text[:200]}")

    # -- the prober and the monitor ----------------------------------------------------------------------------

    def prober(self) -> None:
        session = requests.Session()
        while time.monotonic() < self.until:
            busy = self.busy.is_set()
            started = time.perf_counter()
            try:
                ok = session.get(f"{self.base}/healthz", timeout=30).status_code == 200
            except requests.RequestException as exc:
                ok = False
                self.error("probe", f"{type(exc).__name__}")
            elapsed_ms = (time.perf_counter() - started) * 1e3
            if not ok:
                self.error("probe", "healthz not 200")
            with self.lock:
                self.result.healthz_ms.append(elapsed_ms)
                if busy and self.busy.is_set():
                    self.result.healthz_all_busy_ms.append(elapsed_ms)
            time.sleep(0.1)

    def monitor(self) -> None:
        session = requests.Session()
        samples = busy = 0
        while time.monotonic() < self.until:
            try:
                page = session.get(f"{self.base}/v1/plans", params={"status": "solving", "limit": 100}, timeout=30)
                solving = len(page.json()["items"])
            except (requests.RequestException, ValueError, KeyError):
                solving = 0
            if solving >= self.workers:
                self.busy.set()
                busy += 1
            else:
                self.busy.clear()
            samples += 1
            time.sleep(0.25)
        self.result.all_busy_share = busy / samples if samples else 0.0

    def run(self) -> LoadResult:
        threads = [threading.Thread(target=self.client, args=(i,)) for i in range(self.concurrency)]
        threads += [threading.Thread(target=self.prober), threading.Thread(target=self.monitor)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return self.result


def run(seconds: float = 60.0, concurrency: int = 32, workers: int | None = None, http_threads: int = 32,
        seed: int = 0, mix: str = "full") -> dict[str, Any]:
    workers = workers or os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as folder, LiveServer(
        database=Path(folder) / "plans.db", log=Path(folder) / "server.log", workers=workers, threads=http_threads
    ) as server:
        base = server.start()
        tiny = json.loads((WORKLOADS / "tiny.json").read_text())
        for _ in range(2 * workers):  # warm: every solver process started and imported
            requests.post(f"{base}/v1/plans", json=tiny, timeout=60)
        http = server.pids()["http"]
        before = rss_mb(http[0]) if http else None
        load = Load(base, seconds, concurrency, workers, http_threads, seed, mix)
        result = load.run()
        result.http_rss_mb = (before, rss_mb(http[0]) if http else None)
        return {"mix": mix, **result.summary()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--workers", type=int, default=None, help="solver processes (default: one per core)")
    parser.add_argument("--threads", type=int, default=32, help="HTTP threads of the server")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mix", choices=sorted(MIXES), default="full", help="full (the promise's) or small")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    summary = run(args.seconds, args.concurrency, args.workers, args.threads, args.seed, args.mix)
    text = json.dumps(summary, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
