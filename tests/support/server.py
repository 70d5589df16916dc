"""`optsched serve` as a subprocess on 127.0.0.1, in its own process group: start, SIGKILL, restart.

Shared by the reliability tests and benchmarks. Every server runs in a new session, so killing its process
group takes the supervisor, its HTTP process and the solver processes down together (as a `kill -9` of a container
would), and nothing outlives the caller: `LiveServer` is a context manager that kills the group on exit.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import requests

# api/drawing.py names its drawing processes so (not imported from there: the harness imports no Flask app).
CHART_PROCESS_NAME = "optsched-chart"
# The repository root: the server runs where a user runs it (tests/ holds an `api` folder of its own).
ROOT = Path(__file__).resolve().parents[2]
OPTSCHED = Path(sys.executable).with_name("optsched")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LiveServer:
    """One service on one SQLite file; `start` again after `kill` to restart it on the same file."""

    database: Path
    log: Path
    workers: int = 1
    threads: int = 8
    env: dict[str, str] = field(default_factory=dict)
    command: Sequence[str] | None = None  # default: the `optsched serve` entry point
    process: subprocess.Popen | None = None
    port: int = 0
    starts: int = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, *, env: dict[str, str] | None = None, timeout_s: float = 60.0) -> str:
        """Start on a fresh port and wait until /readyz answers 200; the base URL."""
        if self.process is not None and self.process.poll() is None:
            raise RuntimeError("the server is already running")
        self.port = free_port()
        environment = {**os.environ, "OPTSCHED_DATABASE_URL": f"sqlite:///{self.database}", **self.env, **(env or {})}
        if "OPTSCHED_API_TOKEN" not in self.env and "OPTSCHED_API_TOKEN" not in (env or {}):
            environment.pop("OPTSCHED_API_TOKEN", None)
        if not any(environment.get(name) for name in ("OPTSCHED_API_TOKEN", "OPTSCHED_API_TOKENS")):
            environment.setdefault("OPTSCHED_AUTH", "off")  # a server without a token must say so (tenants)
        options = ["--port", str(self.port), "--workers", str(self.workers), "--threads", str(self.threads)]
        command = [*(self.command or [str(OPTSCHED), "serve"]), *options]
        with self.log.open("ab") as out:
            out.write(f"\n=== start {self.starts + 1}: {' '.join(command)}\n".encode())
            out.flush()
            self.process = subprocess.Popen(
                command, env=environment, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, cwd=ROOT
            )
        self.starts += 1
        self._wait_ready(timeout_s)
        return self.base

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            code = self.process.poll() if self.process is not None else None
            if code is not None:
                raise RuntimeError(f"the server exited with {code}:\n{self.log_tail()}")
            try:
                if requests.get(f"{self.base}/readyz", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"the server was not ready in {timeout_s:g} s:\n{self.log_tail()}")

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL the whole process group (supervisor, HTTP process, solver processes) and reap the leader."""
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(10)
        _wait_group_gone(self.process.pid)

    def stop(self, timeout_s: float = 15.0) -> None:
        """SIGTERM (the supervisor's graceful stop), then SIGKILL what is left of the group."""
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout_s)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
        self.kill()

    def pids(self) -> dict[str, list[int]]:
        """The group's processes by role: `arbiter`, `http` (the waitress process) and `solvers`."""
        if self.process is None or self.process.poll() is not None:
            return {"arbiter": [], "http": [], "solvers": []}
        leader = self.process.pid
        tree = process_tree(leader)
        http = tree.get(leader, [])
        solvers = [p for h in http for p in tree.get(h, []) if _is_solver(p)]
        return {"arbiter": [leader], "http": http, "solvers": solvers}

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def __enter__(self) -> LiveServer:
        return self

    def __exit__(self, *exc) -> None:
        self.kill()


def _wait_group_gone(pgid: int, timeout_s: float = 10.0) -> None:
    """Wait until no process of the group is left (SIGKILL is asynchronous for the group's other members)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        except PermissionError:
            return
        time.sleep(0.02)


def process_tree(root: int) -> dict[int, list[int]]:
    """Children by parent pid, for `root` and its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    tree: dict[int, list[int]] = {}
    stack = [root]
    while stack:
        pid = stack.pop()
        tree[pid] = sorted(children.get(pid, []))
        stack.extend(tree[pid])
    return tree


def _is_solver(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        if Path(f"/proc/{pid}/comm").read_text().strip() == CHART_PROCESS_NAME:
            return False  # a chart's drawing process (api/drawing.py), spawned the same way
    except OSError:
        return False
    return b"multiprocessing.spawn" in cmdline or b"spawn_main" in cmdline


def rss_mb(pid: int) -> float | None:
    """Resident set size of a process in MiB (None once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None
