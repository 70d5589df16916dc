"""Outage scenarios of the scaled deployment, shared by tests/outages and bench/outages.py.

Each scenario runs against dependencies of its own: a `redis-server` on a free loopback port with its own data
directory (restarted with or without persistence), and a PostgreSQL database created for it on the machine's
server (127.0.0.1:5432, trust authentication; dropped at the end). `optsched worker` pools and one `optsched serve`
run as subprocesses, clients keep submitting workloads (each with its own Idempotency-Key, retried on 503 until
accepted) and reading plans, and the faults are injected while plans are queued and solving:

- Redis SIGKILLed and restarted (empty, or from its append-only file);
- the database refusing connections, its sessions cut (`ALTER DATABASE ... ALLOW_CONNECTIONS false` and
  `pg_terminate_backend`), then accepting again;
- a worker pool SIGKILLed (its workers and horses stop themselves) while it solves.

Why the database outage is made that way rather than with a TCP proxy: PostgreSQL itself refuses, so the
application sees PostgreSQL's own errors (FATAL at connect, sessions terminated by the administrator in the middle
of a query or a commit), there is no process of ours in the data path that could fail or hide a bug, and only the
scenario's own database is touched, never the server other tests and engineers use.

Afterwards `check` holds the promises: every accepted plan ends final with exactly one row and a plan the
independent verifier accepts; no claim is solved twice (each horse logs `plan <id>: solving claim <n>`); clients
saw only 2xx, 4xx and 503; and it reports what happened (statuses, recovery times, re-solves, spooled answers).
"""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from optsched.testing.instances import generate
from optsched.verify.placement import verify
from tests.support.server import LiveServer, free_port

PG_HOST, PG_PORT = "127.0.0.1", 5432
OPTSCHED = Path(sys.executable).with_name("optsched")
REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
FEASIBLE = ("optimal", "time_limit")
UNFINISHED = ("queued", "solving")
# A traceback in a log: the line before it, and its last line (the exception).
TRACEBACK = re.compile(r"([^\n]*)\nTraceback \(most recent call last\):\n(?:[ \t][^\n]*\n)*([^\n]*)")
SOLVING_LINE = re.compile(r"plan ([0-9a-f]{32}): solving claim (\d+)")
# Short lease, grace and result retry: a dead worker's row is requeued within seconds, and a database outage longer
# than a few seconds makes horses spool their answers.
LEASE_S, GRACE_S, RESULT_RETRY_S = 2.0, 2.0, 2.0


def listening(port: int, host: str = PG_HOST) -> bool:
    import socket

    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def pg_admin_url() -> str:
    """A psycopg URL of the `test` database as the first user that may create databases (postgres or root)."""
    import psycopg

    errors = []
    for user in filter(None, (os.environ.get("OPTSCHED_TEST_PG_USER"), "postgres", "root")):
        url = f"postgresql://{user}@{PG_HOST}:{PG_PORT}/test"
        try:
            with psycopg.connect(url, connect_timeout=3):
                return url
        except psycopg.OperationalError as exc:
            errors.append(f"{user}: {exc}")
    raise RuntimeError("PostgreSQL listens on 127.0.0.1:5432 but lets no test user in: " + "; ".join(errors))


@dataclass
class PgDatabase:
    """A database of the scenario's own on the machine's PostgreSQL, which can be made to refuse connections."""

    admin_url: str
    name: str = field(default_factory=lambda: f"optsched_outage_{uuid.uuid4().hex[:10]}")

    @property
    def user(self) -> str:
        return self.admin_url.split("//", 1)[1].split("@", 1)[0]

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://{self.user}@{PG_HOST}:{PG_PORT}/{self.name}"

    def _admin(self, *statements: str, params: tuple = ()) -> None:
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True, connect_timeout=10) as c:
            for statement in statements:
                c.execute(statement, params if "%s" in statement else None)

    def create(self) -> PgDatabase:
        self._admin(f'CREATE DATABASE "{self.name}"')
        return self

    def refuse(self) -> None:
        """Refuse new connections and terminate every session of this database (what the app sees of an outage)."""
        self._admin(
            f'ALTER DATABASE "{self.name}" ALLOW_CONNECTIONS false',
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            params=(self.name,),
        )

    def allow(self) -> None:
        self._admin(f'ALTER DATABASE "{self.name}" ALLOW_CONNECTIONS true')

    def drop(self) -> None:
        self._admin(f'ALTER DATABASE "{self.name}" ALLOW_CONNECTIONS true',
                    f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')

    def rows(self) -> list[dict[str, Any]]:
        """Every row of `plans`: id, idempotency key, status (the verdict once finished, as the API shows it),
        attempts, plan document."""
        import psycopg
        from psycopg.rows import dict_row

        url = f"postgresql://{self.user}@{PG_HOST}:{PG_PORT}/{self.name}"
        with psycopg.connect(url, connect_timeout=10, row_factory=dict_row) as c:
            return list(c.execute(
                "SELECT id, idempotency_key, COALESCE(verdict, status) AS status, attempts, plan FROM plans"
            ))


@dataclass
class RedisServer:
    """A `redis-server` of the scenario's own: its port, its data directory; SIGKILL it and start it again."""

    directory: Path
    port: int = field(default_factory=free_port)
    persistent: bool = False
    process: subprocess.Popen | None = None
    starts: int = 0

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, *, persistent: bool | None = None, timeout_s: float = 30.0) -> float:
        """Start (with the append-only file when persistent, else empty) and wait until it answers; when it did."""
        if persistent is not None:
            self.persistent = persistent
        if not self.persistent and self.directory.exists():
            shutil.rmtree(self.directory)  # without persistence a restart starts empty, whatever an earlier run left
        self.directory.mkdir(parents=True, exist_ok=True)
        command = [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.directory),
                   "--save", "", "--appendonly", "yes" if self.persistent else "no", "--protected-mode", "no",
                   "--logfile", str(self.directory.parent / f"redis-{self.port}.log")]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        self.starts += 1
        from redis import Redis
        from redis.exceptions import RedisError

        client = Redis(host="127.0.0.1", port=self.port, socket_connect_timeout=1)
        deadline = time.monotonic() + timeout_s
        try:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(f"redis-server exited with {self.process.returncode}")
                try:
                    if client.ping():
                        return time.monotonic()
                except RedisError:
                    time.sleep(0.05)
        finally:
            client.close()
        raise RuntimeError(f"redis-server on port {self.port} did not answer within {timeout_s:g} s")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


def session_pids(sid: int) -> list[int]:
    """Live processes of the session `sid` (a worker pool started with start_new_session, its workers, horses)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            pids.append(int(entry.name))
    return pids


@dataclass
class WorkerFleet:
    """`optsched worker` pools, each a subprocess in its own session; every process of each is killed at the end."""

    env: dict[str, str]
    logs: Path
    processes: list[subprocess.Popen] = field(default_factory=list)

    def start(self, concurrency: int = 1) -> subprocess.Popen:
        log = self.logs / f"worker-{len(self.processes)}.log"
        with log.open("ab") as out:
            process = subprocess.Popen([str(OPTSCHED), "worker", "--concurrency", str(concurrency)], env=self.env,
                                       stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        process.log = log  # type: ignore[attr-defined]
        self.processes.append(process)
        return process

    def wait_listening(self, process: subprocess.Popen, workers: int = 1, timeout_s: float = 90) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"worker exited early:\n{process.log.read_text()[-3000:]}")  # type: ignore[attr-defined]
            if process.log.read_text(errors="replace").count("*** Listening on") >= workers:  # type: ignore[attr-defined]
                return
            time.sleep(0.1)
        raise RuntimeError(f"worker not listening after {timeout_s:g} s")

    def alive(self) -> list[subprocess.Popen]:
        return [p for p in self.processes if p.poll() is None]

    def kill(self, process: subprocess.Popen) -> None:
        """SIGKILL the pool process (as a lost machine): its workers and horses notice and stop by themselves."""
        os.kill(process.pid, signal.SIGKILL)
        process.wait(10)

    def terminate(self, process: subprocess.Popen, timeout_s: float = 60) -> float:
        """SIGTERM a pool (as `systemctl stop` does); seconds until the pool and all its processes are gone."""
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            pass
        while session_pids(process.pid) and time.monotonic() - started < timeout_s:
            time.sleep(0.05)
        return time.monotonic() - started

    def mark(self) -> dict[Path, int]:
        """Where each log ends now: `logs_text(mark)` reads only what was written after."""
        return {p.log: p.log.stat().st_size for p in self.processes}  # type: ignore[attr-defined]

    def logs_text(self, since: dict[Path, int] | None = None) -> str:
        text = []
        for p in self.processes:
            with p.log.open("rb") as f:  # type: ignore[attr-defined]
                f.seek((since or {}).get(p.log, 0))  # type: ignore[attr-defined]
                text.append(f.read().decode(errors="replace"))
        return "".join(text)

    def stop_all(self) -> None:
        for p in self.alive():
            p.send_signal(signal.SIGTERM)
        for p in self.processes:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(p.pid, signal.SIGKILL)
                p.wait(5)
            for pid in session_pids(p.pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def small_workload(seed: int) -> dict[str, Any]:
    """20 jobs on 4 device groups: tens of milliseconds to optimal."""
    return generate("S", seed).model_dump(mode="json", exclude_none=True)


def long_workload(seed: int, time_limit_s: float) -> dict[str, Any]:
    """Quick to find plans, slow to prove exactly: its solve runs for (most of) its time limit."""
    options = {"time_limit_s": time_limit_s, "mip_gap": 0.0}
    return generate("T", seed % 3, options=options).model_dump(mode="json", exclude_none=True)


@dataclass
class Traffic:
    """Clients of the API: `clients` threads submitting workloads (a long one every `long_every`) each with its own
    Idempotency-Key, retrying on 503 until accepted, and one reader polling lists and plans. Every answer's status
    is counted; `accepted` maps each key to its plan id and workload."""

    base: str
    clients: int = 2
    pace_s: float = 0.6
    long_every: int = 4
    long_s: float = 2.0
    drain_s: float = 90.0
    statuses: Counter = field(default_factory=Counter)
    answers: list[tuple[float, str, int]] = field(default_factory=list)  # (monotonic time, method, status)
    accepted: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    unaccepted: list[str] = field(default_factory=list)
    sent_keys: set[str] = field(default_factory=set)
    long_keys: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _running: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _sent: int = 0

    def start(self) -> Traffic:
        self._running.set()
        self._threads = [threading.Thread(target=self._client, args=(i,), daemon=True) for i in range(self.clients)]
        self._threads.append(threading.Thread(target=self._reader, daemon=True))
        for t in self._threads:
            t.start()
        return self

    def stop(self) -> None:
        """Stop sending new workloads; a submission under way is retried until accepted (up to `drain_s`)."""
        self._running.clear()
        for t in self._threads:
            t.join(self.drain_s + 30)

    def submit_now(self, data: dict[str, Any]) -> str | None:
        """Submit one workload from the calling thread (retried on 503); its plan id once accepted."""
        key = uuid.uuid4().hex
        return self._submit(key, data, time.monotonic() + self.drain_s)

    def long_plans(self) -> set[str]:
        """The ids of the accepted plans that solve for (most of) `long_s`."""
        with self._lock:
            return {plan_id for key, (plan_id, _) in self.accepted.items() if key in self.long_keys}

    def _note(self, method: str, status: int) -> None:
        with self._lock:
            self.statuses[status] += 1
            self.answers.append((time.monotonic(), method, status))

    def _client(self, index: int) -> None:
        rng = random.Random(index)
        session = requests.Session()
        while self._running.is_set():
            with self._lock:
                n = self._sent
                self._sent += 1
            long = n % self.long_every == 0
            data = long_workload(n, self.long_s) if long else small_workload(n)
            data["name"] = f"outage-{n}"
            key = uuid.uuid4().hex
            if long:
                with self._lock:
                    self.long_keys.add(key)
            self._submit(key, data, time.monotonic() + self.drain_s, session)
            time.sleep(self.pace_s * (0.5 + rng.random()))

    def _submit(self, key: str, data: dict[str, Any], deadline: float,
                session: requests.Session | None = None) -> str | None:
        session = session or requests.Session()
        headers = {"Idempotency-Key": key, "Prefer": "respond-async"}
        with self._lock:
            self.sent_keys.add(key)
        while time.monotonic() < deadline:
            try:
                answer = session.post(f"{self.base}/v1/plans", json=data, headers=headers, timeout=30)
            except requests.RequestException:
                self._note("POST", 0)
                time.sleep(0.5)
                continue
            self._note("POST", answer.status_code)
            if answer.status_code in (201, 202):
                plan_id = answer.json()["id"]
                with self._lock:
                    self.accepted[key] = (plan_id, data)
                return plan_id
            if answer.status_code != 503:
                break
            time.sleep(min(float(answer.headers.get("Retry-After", "1")), 0.5))  # impatient clients: more requests
        with self._lock:
            self.unaccepted.append(key)
        return None

    def _reader(self) -> None:
        session = requests.Session()
        while self._running.is_set():
            for path in self._read_paths():
                try:
                    answer = session.get(f"{self.base}{path}", timeout=30)
                    self._note("GET", answer.status_code)
                except requests.RequestException:
                    self._note("GET", 0)
            time.sleep(0.2)

    def _read_paths(self) -> Iterator[str]:
        yield "/v1/plans?limit=5"
        with self._lock:
            ids = [plan_id for plan_id, _ in self.accepted.values()]
        if ids:
            yield f"/v1/plans/{random.choice(ids)}"

    def first_accepted_after(self, moment: float) -> float | None:
        """Seconds from `moment` to the first POST answered 2xx after it."""
        with self._lock:
            times = [
                t for t, method, status in self.answers if method == "POST" and 200 <= status < 300 and t >= moment
            ]
        return min(times) - moment if times else None

    def statuses_between(self, start: float, end: float) -> Counter:
        with self._lock:
            return Counter(f"{method} {status}" for t, method, status in self.answers if start <= t <= end)


@dataclass
class Deployment:
    """Redis, a database, worker pools and an API of a scenario's own (see the module docstring)."""

    root: Path
    workers: int = 2
    lease_s: float = LEASE_S
    grace_s: float = GRACE_S
    result_retry_s: float = RESULT_RETRY_S
    # Set by start(), which the scenarios run after (before it, reading one raises AttributeError).
    redis: RedisServer = field(init=False, repr=False)
    database: PgDatabase = field(init=False, repr=False)
    fleet: WorkerFleet = field(init=False, repr=False)
    api: LiveServer = field(init=False, repr=False)

    def start(self) -> Deployment:
        self.root.mkdir(parents=True, exist_ok=True)
        self.redis = RedisServer(self.root / "redis")
        self.redis.start(persistent=False)
        self.database = PgDatabase(pg_admin_url()).create()
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPTSCHED_")}
        env.update(OPTSCHED_DATABASE_URL=self.database.url, OPTSCHED_QUEUE_URL=self.redis.url,
                   OPTSCHED_QUEUE_NAME="outages", OPTSCHED_LEASE_S=str(self.lease_s),
                   OPTSCHED_SOLVE_GRACE_S=str(self.grace_s), OPTSCHED_RESULT_RETRY_S=str(self.result_retry_s),
                   OPTSCHED_SPOOL_DIR=str(self.root / "spool"))
        self.fleet = WorkerFleet(env, self.root)
        for _ in range(self.workers):
            self.fleet.start()
        self.api = LiveServer(self.root / "unused.db", self.root / "api.log", threads=8,
                              env={k: v for k, v in env.items() if k.startswith("OPTSCHED_")})
        self.api.start()
        for process in self.fleet.processes:
            self.fleet.wait_listening(process)
        return self

    def stop(self) -> None:
        # A start that failed half-way leaves only some of them set.
        if hasattr(self, "api"):
            self.api.stop()
        if hasattr(self, "fleet"):
            self.fleet.stop_all()
        if hasattr(self, "redis"):
            self.redis.kill()
        if hasattr(self, "database"):
            self.database.drop()

    def ensure_workers(self) -> None:
        while len(self.fleet.alive()) < self.workers:
            self.fleet.wait_listening(self.fleet.start())

    def counts(self) -> Counter:
        """Rows by status, read straight from PostgreSQL."""
        return Counter(row["status"] for row in self.database.rows())

    def wait_for(self, condition: Callable[[], bool], timeout_s: float, what: str, step_s: float = 0.1) -> float:
        """Seconds until `condition()` held (it may raise while a dependency is down); AssertionError after timeout."""
        started = time.monotonic()
        while time.monotonic() - started < timeout_s:
            try:
                if condition():
                    return time.monotonic() - started
            except Exception:  # noqa: BLE001 - the dependency may still be coming back
                pass
            time.sleep(step_s)
        raise AssertionError(f"{what}: not within {timeout_s:g} s")

    def in_flight(self) -> bool:
        """Some plan solving and some waiting: the moment to cut a dependency."""
        counts = self.counts()
        return counts["solving"] >= 1 and counts["queued"] + counts["solving"] >= 2

    def wait_for_solving_pool(self, timeout_s: float = 60, plans: Callable[[], set[str]] | None = None
                              ) -> subprocess.Popen:
        """A worker pool whose horse holds a lease (it is solving) right now, of one of `plans()` if given."""
        from redis import Redis

        from optsched.infra.rq.lease import Lease

        found: list[subprocess.Popen] = []

        def solving() -> bool:
            with Redis.from_url(self.redis.url, socket_connect_timeout=2) as r:
                for key in r.scan_iter(match="optsched:outages:lease:*"):
                    lease = Lease.loads(r.get(key))
                    if lease is None or lease.job.startswith("spooled"):
                        continue
                    if plans is not None and key.decode().rsplit(":", 1)[-1] not in plans():
                        continue
                    sid = os.getsid(lease.pid)
                    found[:] = [p for p in self.fleet.alive() if p.pid == sid]
                    if found:
                        return True
            return False

        self.wait_for(solving, timeout_s, "a worker pool solving")
        return found[0]

    def worker_count(self) -> int:
        from redis import Redis
        from rq import Queue, Worker

        with Redis.from_url(self.redis.url, socket_connect_timeout=2) as r:
            return len(Worker.all(queue=Queue("outages", connection=r)))

    def readyz(self) -> tuple[int, str]:
        answer = requests.get(f"{self.api.base}/readyz", timeout=10)
        return answer.status_code, answer.json().get("detail", "")


@dataclass
class OutageReport:
    """What one scenario saw; `problems` lists every broken promise (empty: all held)."""

    scenario: str
    outage_s: float = 0.0
    in_flight_at_cut: dict[str, int] = field(default_factory=dict)
    statuses: Counter = field(default_factory=Counter)
    statuses_during: Counter = field(default_factory=Counter)
    readyz_during: str = ""
    accepted: int = 0
    rows: int = 0
    final: Counter = field(default_factory=Counter)
    first_accepted_after_s: float | None = None
    in_flight_final_after_s: float | None = None
    workers_registered_after_s: float | None = None
    stop_after_sigterm_s: float | None = None
    attempts: Counter = field(default_factory=Counter)
    solves: int = 0
    re_solves: int = 0
    spooled: int = 0
    spool_replayed: int = 0
    worker_respawns: int = 0
    tracebacks: int = 0
    # What each traceback in the logs ended with, and the line logged before it: a failure names its cause.
    traceback_causes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    log_mark: dict[Path, int] = field(default_factory=dict, repr=False)  # where the worker logs stood at the start

    def row(self) -> str:
        """One line of the results table."""
        def s(value: float | None) -> str:
            return "-" if value is None else f"{value:.1f}"

        statuses = ", ".join(f"{k}: {v}" for k, v in sorted(self.statuses.items()))
        return (f"| {self.scenario} | {self.outage_s:.1f} | {self.in_flight_at_cut.get('solving', 0)} solving, "
                f"{self.in_flight_at_cut.get('queued', 0)} queued | {self.accepted} | {statuses} | "
                f"{s(self.first_accepted_after_s)} | {s(self.in_flight_final_after_s)} | "
                f"{s(self.workers_registered_after_s)} | {s(self.stop_after_sigterm_s)} | {self.spooled} | "
                f"{self.re_solves} | {'ok' if not self.problems else '; '.join(self.problems)} |")


TABLE_HEADER = (
    "| scenario | outage s | in flight at the cut | plans accepted | client statuses (count) | first 2xx POST after "
    "recovery s | in-flight plans final after recovery s | workers registered again after s | worker stop after "
    "SIGTERM s | answers spooled | re-solves | promises |\n"
    "|---|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---|"
)


def check(deployment: Deployment, traffic: Traffic, report: OutageReport, *, max_attempts: int = 1,
          final_timeout_s: float = 120.0) -> OutageReport:
    """Wait until every accepted plan is final, then hold the promises (see the module docstring) and fill in
    `report`; a broken promise goes to `report.problems`."""
    keys = dict(traffic.accepted)
    deployment.wait_for(lambda: not any(r["status"] in UNFINISHED for r in deployment.database.rows()),
                        final_timeout_s, "every accepted plan final", step_s=0.25)
    everything = deployment.database.rows()
    if any(r["idempotency_key"] is None for r in everything):
        report.problems.append("rows without an Idempotency-Key (no client sent one)")
    rows = [r for r in everything if r["idempotency_key"] in traffic.sent_keys]  # this scenario's
    by_key: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_key.setdefault(row["idempotency_key"], []).append(row)
    report.accepted, report.rows = len(keys), len(rows)
    report.statuses = Counter(traffic.statuses)
    report.final = Counter(r["status"] for r in rows)
    report.attempts = Counter(r["attempts"] for r in rows)
    bad_statuses = {s for s in report.statuses if not (200 <= s < 500 or s == 503)}
    if bad_statuses:
        report.problems.append(f"clients saw {sorted(bad_statuses)}")
    if traffic.unaccepted:
        report.problems.append(f"{len(traffic.unaccepted)} workload(s) never accepted")
    if len(rows) != len(keys) or set(by_key) != set(keys):
        report.problems.append(f"{len(rows)} rows for {len(keys)} accepted plans")
    for key, (plan_id, data) in keys.items():
        found = by_key.get(key, [])
        if len(found) != 1 or found[0]["id"] != plan_id:
            report.problems.append(f"plan {plan_id}: {len(found)} row(s) for its key")
            continue
        row = found[0]
        if row["status"] not in FEASIBLE:
            report.problems.append(f"plan {plan_id} ended {row['status']}")
        elif verify(data, row["plan"]):
            report.problems.append(f"plan {plan_id}: the verifier rejects its plan")
        if row["attempts"] > max_attempts:
            report.problems.append(f"plan {plan_id} was claimed {row['attempts']} times")
    logs = deployment.fleet.logs_text(report.log_mark)
    ours = {r["id"] for r in rows}
    solves = Counter(claim for claim in SOLVING_LINE.findall(logs) if claim[0] in ours)
    report.solves = sum(solves.values())
    twice = [claim for claim, n in solves.items() if n > 1]
    if twice:
        report.problems.append(f"claims solved more than once: {twice}")
    per_plan = Counter(plan_id for plan_id, _ in solves)
    report.re_solves = sum(n - 1 for n in per_plan.values())
    report.spooled = logs.count("spooled to")
    report.spool_replayed = len(re.findall(r"spooled answer of claim \d+ recorded", logs))
    report.worker_respawns = len(
        re.findall(r"exited [\d.]+ s after it started|Redis stopped answering as it started", logs)
    )
    report.tracebacks = logs.count("Traceback (most recent call last)")
    report.traceback_causes = [f"{before.strip()} -> {error.strip()}" for before, error in TRACEBACK.findall(logs)]
    return report


def _cut_while_in_flight(deployment: Deployment, traffic: Traffic, report: OutageReport) -> None:
    deployment.wait_for(deployment.in_flight, 90, "plans queued and solving")
    counts = deployment.counts()
    report.in_flight_at_cut = {"solving": counts["solving"], "queued": counts["queued"]}


def _unfinished_ids(deployment: Deployment) -> set[str]:
    return {r["id"] for r in deployment.database.rows() if r["status"] in UNFINISHED}


def redis_outage(deployment: Deployment, *, persistent: bool, down_s: float = 4.0, traffic_after_s: float = 2.0,
                 **traffic_options: Any) -> OutageReport:
    """Redis SIGKILLed while plans are in flight, restarted after `down_s` (from its append-only file when
    `persistent`, else empty); then an idle worker pool is stopped with SIGTERM and replaced."""
    report = OutageReport(f"Redis killed, restarted {'with' if persistent else 'without'} persistence",
                          log_mark=deployment.fleet.mark())
    redis = deployment.redis
    if redis.persistent != persistent:  # restart it in the mode asked for, before any plan is submitted
        redis.kill()
        redis.start(persistent=persistent)
        deployment.wait_for(lambda: deployment.worker_count() == deployment.workers, 60, "workers registered")
    traffic = Traffic(deployment.api.base, **traffic_options).start()
    try:
        _cut_while_in_flight(deployment, traffic, report)
        cut = time.monotonic()
        redis.kill()
        time.sleep(down_s / 2)
        report.readyz_during = deployment.readyz()[1]
        time.sleep(down_s / 2)
        back = redis.start()
        report.outage_s = back - cut
        report.statuses_during = traffic.statuses_between(cut, back)
        in_flight = _unfinished_ids(deployment)
        report.workers_registered_after_s = deployment.wait_for(
            lambda: deployment.worker_count() == deployment.workers, 60, "workers registered again")
        report.in_flight_final_after_s = _seconds_until_final(deployment, in_flight, back)
        time.sleep(traffic_after_s)
    finally:
        traffic.stop()
    report.first_accepted_after_s = traffic.first_accepted_after(back)
    check(deployment, traffic, report)
    # An idle pool, after the restart, stops within seconds of SIGTERM; its replacement takes plans at once.
    idle = deployment.fleet.alive()[0]
    report.stop_after_sigterm_s = deployment.fleet.terminate(idle)
    deployment.ensure_workers()
    return report


def _seconds_until_final(deployment: Deployment, ids: set[str], since: float, timeout_s: float = 120) -> float:
    deployment.wait_for(lambda: not (ids & _unfinished_ids(deployment)), timeout_s, "plans in flight final")
    return time.monotonic() - since


def database_outage(deployment: Deployment, *, down_s: float = 8.0, traffic_after_s: float = 2.0,
                    **traffic_options: Any) -> OutageReport:
    """The database refuses connections and its sessions are cut while plans solve, for `down_s`."""
    report = OutageReport("database refusing connections, sessions terminated", log_mark=deployment.fleet.mark())
    traffic = Traffic(deployment.api.base, **traffic_options).start()
    try:
        _cut_while_in_flight(deployment, traffic, report)
        cut = time.monotonic()
        deployment.database.refuse()
        time.sleep(down_s / 2)
        report.readyz_during = deployment.readyz()[1]
        time.sleep(down_s / 2)
        deployment.database.allow()
        back = time.monotonic()
        report.outage_s = back - cut
        report.statuses_during = traffic.statuses_between(cut, back)
        in_flight = _unfinished_ids(deployment)
        report.in_flight_final_after_s = _seconds_until_final(deployment, in_flight, back)
        time.sleep(traffic_after_s)
    finally:
        deployment.database.allow()
        traffic.stop()
    report.first_accepted_after_s = traffic.first_accepted_after(back)
    return check(deployment, traffic, report)


def worker_killed(deployment: Deployment, **traffic_options: Any) -> OutageReport:
    """A worker pool SIGKILLed while it solves; another is started. Its plan is solved again: one more claim."""
    report = OutageReport("worker pool killed while solving", log_mark=deployment.fleet.mark())
    traffic = Traffic(deployment.api.base, **traffic_options).start()
    try:
        _cut_while_in_flight(deployment, traffic, report)
        # A pool solving a long plan: a small one can end between finding its lease and the kill (seen on a busy
        # machine), and then nothing is solved again.
        victim = deployment.wait_for_solving_pool(plans=traffic.long_plans)
        cut = time.monotonic()
        deployment.fleet.kill(victim)
        deployment.ensure_workers()
        back = time.monotonic()
        report.outage_s = back - cut
        in_flight = _unfinished_ids(deployment)
        report.in_flight_final_after_s = _seconds_until_final(deployment, in_flight, back)
    finally:
        traffic.stop()
    report.first_accepted_after_s = traffic.first_accepted_after(back)
    return check(deployment, traffic, report, max_attempts=2)
