"""Promise 4's scenario: submit workloads while the server is SIGKILLed again and again; lose nothing.

Clients POST each workload with its own Idempotency-Key until the service answers 201/202 (a retry after a
crash returns the plan the first attempt created, if it got that far). The server runs in its own process
group; each cycle ends with SIGKILL of the whole group (supervisor, waitress HTTP process, solver processes):
- the first while a plan is solving (so that recovery has work to do),
- then alternately at a random moment, or from inside the server at its Nth database commit or write
  (api/failpoints.py): mid-transaction, the moment a crash can hurt a database most.
A last server runs until every accepted plan is final. Then: every accepted plan has a final status with a plan
the verifier passes, the table has exactly one row per workload (no duplicates from the retries), and SQLite's
`PRAGMA integrity_check` answers ok.
"""

from __future__ import annotations

import json
import random
import sqlite3
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from optsched.schema.catalog import sample_workload_path
from optsched.verify.placement import verify
from tests.support.factories import device, job, workload
from tests.support.server import LiveServer

FAILPOINT_SERVER = (sys.executable, "-m", "api.failpoints")
FEASIBLE = ("optimal", "time_limit")
UNFINISHED = ("queued", "solving")


@dataclass
class CrashReport:
    workloads: int
    accepted: int = 0
    kills: int = 0
    failpoint_kills: int = 0
    kills_while_solving: int = 0
    requeued_at_restart: int = 0
    statuses: Counter = field(default_factory=Counter)
    unverified: list[str] = field(default_factory=list)
    rows: int = 0
    integrity: str = ""
    seconds: float = 0.0
    post_errors: int = 0  # requests cut by a kill (then retried)

    @property
    def ok(self) -> bool:
        return (
            self.accepted == self.workloads
            and not self.unverified
            and set(self.statuses) <= set(FEASIBLE)
            and self.rows == self.workloads
            and self.integrity == "ok"
        )


def crash_workloads(count: int, seed: int) -> list[dict[str, Any]]:
    """`count` different small workloads (milliseconds to solve), the first one slower (1 s)."""
    rng = random.Random(seed)
    out = []
    slow = json.loads(sample_workload_path("demo").read_text())
    slow["options"] = {"time_limit_s": 1.0, "mip_gap": 0.0}
    slow["name"] = "slow"
    out.append(slow)
    for i in range(count - 1):
        groups = [
            device(f"g{g}", f"m{g}", rng.randint(1, 4), [(100, 1.0), (150 + 50 * g, 1.3 + 0.2 * g)])
            for g in range(rng.randint(1, 3))
        ]
        jobs = [
            job(
                f"j{j}",
                work=rng.choice([1, 5, 20]),
                p=rng.choice([0.5, 0.9, 0.99]),
                priority=rng.choice(["normal", "low"]),
            )
            for j in range(rng.randint(1, 4))
        ]
        out.append(workload(groups, jobs, name=f"w{i}", options={"time_limit_s": 10}))
    return out


class Submitters:
    """Threads that POST every workload (with its Idempotency-Key) until the service accepts it."""

    def __init__(self, workloads: list[dict[str, Any]], threads: int = 4):
        self.workloads = workloads
        self.keys = [str(uuid.uuid4()) for _ in workloads]
        self.accepted: dict[int, str] = {}  # workload index -> plan id
        self.pending: list[int] = []
        self.released = 0
        self.base: str | None = None
        self.errors = 0
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._run, daemon=True) for _ in range(threads)]

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def join(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(30)

    def _run(self) -> None:
        session = requests.Session()
        while not self.stop.is_set():
            with self.lock:
                index = self.pending.pop(0) if self.pending else None
                base = self.base
            if index is None:
                time.sleep(0.02)
                continue
            if base is None:
                self._give_back(index)
                time.sleep(0.05)
                continue
            headers = {"Idempotency-Key": self.keys[index]}
            if index % 2 == 0:
                headers["Prefer"] = "respond-async"
            try:
                response = session.post(f"{base}/v1/plans", json=self.workloads[index], headers=headers, timeout=15)
            except requests.RequestException:
                with self.lock:
                    self.errors += 1
                self._give_back(index)
                time.sleep(0.05)
                continue
            if response.status_code in (201, 202):
                with self.lock:
                    self.accepted[index] = response.json()["id"]
            else:
                self._give_back(index)
                time.sleep(0.2)

    def _give_back(self, index: int) -> None:
        with self.lock:
            self.pending.append(index)

    def release(self, count: int) -> None:
        """Let the next `count` workloads be submitted (each cycle gets its share, so every cycle has work)."""
        with self.lock:
            upto = min(len(self.workloads), self.released + count)
            self.pending.extend(range(self.released, upto))
            self.released = upto

    def set_base(self, base: str | None) -> None:
        with self.lock:
            self.base = base


def run_crash_scenario(
    folder: Path, *, workloads: int = 50, kills: int = 4, seed: int = 0, workers: int = 1, drain_s: float = 90.0
) -> CrashReport:
    rng = random.Random(seed)
    started = time.monotonic()
    folder.mkdir(parents=True, exist_ok=True)
    data = crash_workloads(workloads, seed)
    report = CrashReport(workloads=workloads)
    server = LiveServer(
        database=folder / "plans.db", log=folder / "server.log", workers=workers, command=FAILPOINT_SERVER,
        env={"OPTSCHED_SYNC_WAIT_S": "1"},
    )
    clients = Submitters(data)
    clients.start()
    share = max(1, workloads // (kills + 1))
    try:
        for cycle in range(kills):
            failpoint = cycle % 2 == 1
            # Each accepted plan takes 3 commits (create, claim, finish): N lands among this cycle's writes.
            n = rng.randint(2, 2 * share)
            env = {"OPTSCHED_TEST_KILL_AT": f"{rng.choice(['commit', 'write'])}:{n}"} if failpoint else {}
            clients.release(share)
            try:
                clients.set_base(server.start(env=env))
            except RuntimeError:
                if not failpoint:
                    raise
                report.kills += 1  # it killed itself during start-up: in recovery's own writes
                report.failpoint_kills += 1
                server.kill()
                continue
            if cycle == 0:
                _wait_for(server.base, clients, 0, ("solving",), timeout_s=30)
                report.kills_while_solving += 1
            elif failpoint:
                deadline = time.monotonic() + 5
                while server.alive() and time.monotonic() < deadline:
                    time.sleep(0.02)
                report.failpoint_kills += 0 if server.alive() else 1
            else:
                # The slow plan first: interrupted at every kill, it would be given up (MAX_ATTEMPTS) by design.
                _wait_for(server.base, clients, 0, FEASIBLE, timeout_s=30)
                time.sleep(rng.uniform(0.3, 2.5))
            clients.set_base(None)
            server.kill()
            report.kills += 1
        clients.release(workloads)
        clients.set_base(server.start())
        deadline = time.monotonic() + drain_s
        while len(clients.accepted) < workloads and time.monotonic() < deadline:
            time.sleep(0.1)
        finals = _wait_final(server.base, clients.accepted, deadline)
        for index, plan_id in clients.accepted.items():
            resource = finals.get(plan_id) or {}
            report.statuses[resource.get("status", "missing")] += 1
            plan = resource.get("plan")
            if plan is None or verify(data[index], plan) != []:
                report.unverified.append(plan_id)
        report.accepted = len(clients.accepted)
    finally:
        clients.join()
        server.kill()
    report.post_errors = clients.errors
    report.requeued_at_restart = _requeued(server.log)
    with sqlite3.connect(server.database) as db:
        report.integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
        report.rows = db.execute("SELECT COUNT(*) FROM plans").fetchone()[0]
    report.seconds = time.monotonic() - started
    return report


def _wait_for(base: str, clients: Submitters, index: int, statuses: tuple[str, ...], timeout_s: float) -> None:
    """Until workload `index` is accepted and in one of `statuses`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        plan_id = clients.accepted.get(index)
        if plan_id is not None:
            try:
                if requests.get(f"{base}/v1/plans/{plan_id}", timeout=5).json()["status"] in statuses:
                    return
            except requests.RequestException:
                pass
        time.sleep(0.02)
    raise AssertionError(f"workload {index} did not reach {statuses} in {timeout_s:g} s")


def _wait_final(base: str, accepted: dict[int, str], deadline: float) -> dict[str, dict]:
    finals: dict[str, dict] = {}
    session = requests.Session()
    while time.monotonic() < deadline:
        for plan_id in accepted.values():
            if plan_id in finals:
                continue
            body = session.get(f"{base}/v1/plans/{plan_id}", timeout=10).json()
            if body.get("status") not in UNFINISHED:
                finals[plan_id] = body
        if len(finals) == len(accepted):
            break
        time.sleep(0.2)
    return finals


def _requeued(log: Path) -> int:
    total = 0
    for line in log.read_text(errors="replace").splitlines():
        if "requeued" in line and "plan(s) left" in line:
            words = line.split("requeued", 1)[1].split()
            if words and words[0].isdigit():
                total += int(words[0])
    return total
