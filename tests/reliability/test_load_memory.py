"""Promises 5 and 6, short versions (bench/load.py and `python -m bench.reliability memory` run the long ones).

5. /healthz answers at once while every solver process is busy and more clients wait on POST /v1/plans than
   the server has HTTP threads (sync waits are capped at OPTSCHED_SYNC_WAIT_SLOTS, half the threads).
6. 200 consecutive solves in one service: the solver processes are recycled every MAX_SOLVES_PER_WORKER solves
   and their resident memory stays within a bound of the first worker's.
"""

from __future__ import annotations

import statistics
import threading
import time

import pytest
import requests

from api import services
from optsched.testing.instances import generate
from tests.api.helpers import tiny_workload
from tests.support.server import rss_mb
from tests.support.timing import loaded

pytestmark = pytest.mark.slow  # real servers and solver processes, at CI's budgets

HTTP_THREADS = 8
CLIENTS = 12  # more than the HTTP threads: without the cap on sync waits, /healthz would queue behind them


def test_healthz_answers_at_once_while_every_worker_solves_and_clients_outnumber_threads(live_server):
    server = live_server("load", workers=1, threads=HTTP_THREADS)
    base = server.start()
    # 60 jobs at gap 0 (optsched/testing/instances.py size T): HiGHS works until the time limit, which outlasts the
    # probes however busy the machine (the server is killed at the end).
    hard = generate("T", 0, options={"time_limit_s": 60, "mip_gap": 0.0}).model_dump(mode="json")
    slow = [
        requests.post(f"{base}/v1/plans", json=hard, headers={"Prefer": "respond-async"}, timeout=10) for _ in range(2)
    ]
    assert all(r.status_code == 202 for r in slow)
    first = base + slow[0].headers["Location"]
    deadline = time.monotonic() + loaded(6.0)
    while requests.get(first, timeout=5).json()["status"] != "solving":
        assert time.monotonic() < deadline
        time.sleep(0.05)

    stop = threading.Event()
    codes: list[int] = []

    def client(i: int) -> None:
        session = requests.Session()
        while not stop.is_set():
            codes.append(session.post(f"{base}/v1/plans", json=tiny_workload(f"c{i}"), timeout=30).status_code)

    clients = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(CLIENTS)]
    for t in clients:
        t.start()
    time.sleep(1.0)  # every sync slot taken, the queue behind the one busy worker growing
    latencies = []
    session = requests.Session()
    probe_until = time.monotonic() + 3.0
    while len(latencies) < 30 and time.monotonic() < probe_until:
        started = time.perf_counter()
        assert session.get(f"{base}/healthz", timeout=10).status_code == 200
        latencies.append(time.perf_counter() - started)
        time.sleep(0.05)
    still_solving = requests.get(first, timeout=10).json()["status"] == "solving"
    stop.set()
    for t in clients:
        t.join(30)
    # Queued behind the sync waits, a probe would take up to their 2 s (OPTSCHED_SYNC_WAIT_S); at once is well under.
    assert statistics.median(latencies) < 0.5 and max(latencies) < loaded(1.0), (latencies, server.log_tail(30))
    assert still_solving, "the worker finished early: /healthz was not measured under a full pool"
    assert set(codes) <= {201, 202, 503}, set(codes)


def test_200_solves_in_one_service_recycle_workers_and_keep_their_memory_bounded(make_app):
    app = make_app(START_WORKERS=True, WORKERS=1, MAX_SOLVES_PER_WORKER=50, SYNC_WAIT_S=30)
    client = app.test_client()
    pool = services(app).queue
    samples: list[tuple[int, int, float]] = []  # (solve, worker pid, RSS MiB)
    for i in range(200):
        data = tiny_workload(f"m{i}")
        response = client.post("/v1/plans", json=data)
        assert response.status_code == 201, response.get_json()
        assert response.get_json()["status"] == "optimal"
        for pid in pool.worker_pids():
            rss = rss_mb(pid)
            if rss is not None:
                samples.append((i, pid, rss))
    pids = {pid for _, pid, _ in samples}
    assert pool.spawned >= 4 and len(pids) >= 4, (pool.spawned, pids)  # 200 solves / 50 per worker
    baseline = max(rss for i, _, rss in samples if i < 10)
    peak = max(rss for _, _, rss in samples)
    assert peak <= baseline + 40, (baseline, peak)
