"""The real server: `optsched serve` (waitress) as a subprocess, spoken to over HTTP."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests

from optsched.service.kinds import KINDS, final_statuses
from optsched.verify.placement import verify
from tests.api.helpers import slow_workload
from tests.support.polling import poll_url

pytestmark = pytest.mark.slow  # a real server over HTTP, a hard-kill restart

OPTSCHED = Path(sys.executable).with_name("optsched")
DEMO = Path(__file__).resolve().parents[2] / "models" / "workloads" / "demo.json"
FINAL = set(final_statuses(KINDS["plan"]))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def server(
    database: Path, log: Path, port: int, *, workers: int = 1, token: str | None = None
) -> Iterator[str]:
    """`optsched serve` in its own process group; killed (the whole group) however the test ends."""
    env = {**os.environ, "OPTSCHED_DATABASE_URL": f"sqlite:///{database}", "OPTSCHED_SYNC_WAIT_S": "2"}
    env.pop("OPTSCHED_API_TOKEN", None)
    env["OPTSCHED_AUTH"] = "off"
    if token is not None:
        env["OPTSCHED_API_TOKEN"] = token
        env["OPTSCHED_AUTH"] = "on"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [str(OPTSCHED), "serve", "--port", str(port), "--workers", str(workers), "--threads", "8"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, process, log)
        yield base
    finally:
        kill_group(process)


def wait_ready(base: str, process: subprocess.Popen, log: Path, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert process.poll() is None, f"server exited early:\n{log.read_text()}"
        try:
            if requests.get(f"{base}/readyz", timeout=2).status_code == 200:
                return
        except requests.RequestException:  # not listening yet, or too busy starting to answer within 2 s
            pass
        time.sleep(0.1)
    raise AssertionError(f"server not ready in {timeout_s} s:\n{log.read_text()}")


def kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(10)


def poll(base: str, location: str, timeout_s: float, headers: dict[str, str] | None = None) -> dict:
    return poll_url(base + location, timeout_s, headers)


def test_demo_over_http_follows_202_to_a_plan_that_verifies(tmp_path):
    data = json.loads(DEMO.read_text())
    log = tmp_path / "server.log"
    with server(tmp_path / "plans.db", log, free_port()) as base:
        response = requests.post(f"{base}/v1/plans", json=data, headers={"Prefer": "respond-async"}, timeout=10)
        assert response.status_code == 202, response.text
        location = response.headers["Location"]
        final = poll(base, location, timeout_s=60)
        assert final["status"] == "optimal", final
        assert verify(data, final["plan"]) == []
        problem = requests.post(f"{base}/v1/plans", data="{", headers={"Content-Type": "application/json"}, timeout=5)
        assert problem.status_code == 400
        assert problem.headers["Content-Type"] == "application/problem+json"
    access = log.read_text()
    assert '"POST /v1/plans HTTP/1.1" 202' in access
    assert f'"GET {location} HTTP/1.1" 200' in access
    assert any(line.endswith("ms") for line in access.splitlines() if "GET /v1/plans/" in line)


def test_plans_survive_a_hard_kill_of_the_server(tmp_path):
    database, log = tmp_path / "plans.db", tmp_path / "server.log"
    data = slow_workload(time_limit_s=1.0)
    with server(database, log, free_port()) as base:
        locations = [
            requests.post(f"{base}/v1/plans", json=data, headers={"Prefer": "respond-async"}, timeout=10).headers[
                "Location"
            ]
            for _ in range(4)
        ]
        deadline = time.monotonic() + 30
        while requests.get(base + locations[0], timeout=5).json()["status"] != "solving":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        # leaving the block SIGKILLs the server and its solver processes mid-solve
    with server(database, log, free_port()) as base:
        finals = [poll(base, location, timeout_s=60) for location in locations]
    assert all(f["status"] in FINAL for f in finals), finals
    for final in finals:
        assert final["status"] in ("optimal", "time_limit"), final
        assert verify(data, final["plan"]) == []
    assert "requeued 4 plan(s)" in log.read_text()
