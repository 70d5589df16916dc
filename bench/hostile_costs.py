"""Issue 25's attacks (the second red team) re-measured on a running `optsched serve`, with the cost of each.

    nice -n 10 python -m bench.hostile_costs [--out bench/results/hostile-costs.md]

On loopback, one server (1 solver process, 8 HTTP threads, default limits), each attack run once while a probe
thread GETs /healthz every 50 ms. Per attack: its answer, wall time, CPU seconds of the server's processes (the
HTTP process and every process under it that is alive at the end, plus the CPU of those it reaped), peak resident
memory of the server's process group, growth of the data folder (the SQLite file and its WAL), and the /healthz
latency during the attack (p50, p99, max; a failed probe counts as its 5 s timeout). The attacks:

- re-plans: 40,000 jobs added to a 1-job plan; 999,990 devices repaired on a 4-device group; a pin of a job the
  plan does not run; a 2-byte `{}` re-plan of a 1,000-job plan (solved; what it stores);
- a night with 1,000 and with 10,000 device failures (checked in the HTTP process, then refused by the solve
  budget, where each failure and its repair is an event);
- ids that look alike: "train" and "train" + U+E0020, "e" + U+0301 beside "é", a no-break space;
- studies: a simulation on 1,000,000 devices; a simulation at load 0.999999 (does its result say it did not
  settle?);
- charts: rounds of 34 concurrent GETs of a fresh placement chart of the 400-job and the 1,000-job plan for at
  least STORM_S, and a cached chart fetched while they run; the queueing study of 10 power levels and 4 classes
  without caps, its plot.png;
- SIGTERM while the chart attack runs: seconds until the server has exited.
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import sqlite3
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import requests

from tests.support.server import LiveServer, process_tree, rss_mb

ROOT = Path(__file__).resolve().parents[1]
RESULTS_MD = ROOT / "bench" / "results" / "hostile-costs.md"
TICKS = os.sysconf("SC_CLK_TCK")
PROBE_TIMEOUT_S = 5.0
# A chart storm lasts at least this long (rounds of 34 GETs): a probe every 50 ms gives 100 probes or more.
STORM_S = 8.0
# A refused attack is sent again and again for this long: its cost per request, and /healthz probed ~60 times.
REPEAT_S = 3.0


def cpu_s(pid: int) -> float:
    """utime + stime + cutime + cstime of a process (its reaped children included), in seconds."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(x) for x in fields[11:15]) / TICKS


def group_cpu_s(root: int) -> float:
    """CPU of `root`'s descendants alive now (each with its reaped children); the supervisor itself excluded."""
    tree = process_tree(root)
    return sum(cpu_s(pid) for pid in tree if pid != root)


def group_rss_mb(root: int) -> float:
    return sum(rss_mb(pid) or 0.0 for pid in process_tree(root))


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.glob("*.db*") if p.is_file())


@dataclass
class Watch:
    """/healthz latency and the group's peak memory, sampled while an attack runs."""

    server: LiveServer
    latencies: list[float] = field(default_factory=list)
    peak_mb: float = 0.0
    stop: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> Watch:
        self.threads = [threading.Thread(target=self._probe), threading.Thread(target=self._memory)]
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        for t in self.threads:
            t.join()

    def _probe(self) -> None:
        with requests.Session() as s:
            while not self.stop.is_set():
                started = time.monotonic()
                try:
                    ok = s.get(f"{self.server.base}/healthz", timeout=PROBE_TIMEOUT_S).status_code == 200
                except requests.RequestException:
                    ok = False
                self.latencies.append(time.monotonic() - started if ok else PROBE_TIMEOUT_S)
                self.stop.wait(0.05)

    def _memory(self) -> None:
        while not self.stop.is_set():
            if self.server.process is not None:
                self.peak_mb = max(self.peak_mb, group_rss_mb(self.server.process.pid))
            self.stop.wait(0.1)

    def figures(self) -> dict[str, float]:
        times = sorted(self.latencies) or [0.0]
        return {
            "probes": len(times),
            "p50_ms": statistics.median(times) * 1000,
            "p99_ms": times[min(len(times) - 1, int(0.99 * len(times)))] * 1000,
            "max_ms": times[-1] * 1000,
            "peak_mb": self.peak_mb,
        }


def measure(server: LiveServer, folder: Path, name: str, attack: Callable[[], str], repeat_s: float = 0.0
            ) -> dict[str, Any]:
    """One attack (sent again and again for `repeat_s`, so that /healthz is probed often enough during a cheap
    one): its answers, and per request its wall time, CPU of the server's processes and growth of the folder."""
    root = server.process.pid
    cpu0, disk0 = group_cpu_s(root), folder_bytes(folder)
    started = time.monotonic()
    answers: list[str] = []
    with Watch(server) as watch:
        answers.append(attack())
        while time.monotonic() - started < repeat_s and server.alive():
            answers.append(attack())
    n = len(answers)
    answer = answers[0] if len(set(answers)) == 1 else "; ".join(sorted(set(answers)))
    row = {"attack": name, "answer": answer, "requests": n, "wall_s": (time.monotonic() - started) / n,
           "cpu_s": (group_cpu_s(root) - cpu0) / n, "disk_mb": (folder_bytes(folder) - disk0) / 1e6 / n,
           **watch.figures()}
    if not server.alive():  # the attack stopped the server: its processes' figures are gone
        row.update(cpu_s=None, disk_mb=None, p50_ms=None, p99_ms=None, max_ms=None)
    print(f"{name}: {answer} ({row['wall_s']:.1f} s, cpu {row['cpu_s']} s, p99 {row['p99_ms']} ms)", flush=True)
    return row


def stored_mb(folder: Path, resource_id: str) -> tuple[float, float]:
    """(input document, result document) of a row as stored, in MB of JSON."""
    with sqlite3.connect(folder / "plans.db") as db:
        row = db.execute("SELECT length(workload), length(plan) FROM plans WHERE id = ?", (resource_id,)).fetchone()
    return row[0] / 1e6, (row[1] or 0) / 1e6


def wait_final(base: str, location: str, timeout_s: float = 300.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        body = requests.get(f"{base}{location}", timeout=30).json()
        if body["status"] not in ("queued", "solving") or time.monotonic() > deadline:
            return body
        time.sleep(0.2)


def jobs(n: int, prefix: str = "j") -> list[dict[str, Any]]:
    return [{"id": f"{prefix}{i}", "work_hours": 1.0 + (i % 7) / 7, "parallel_fraction": 0.5 + (i % 5) / 10}
            for i in range(n)]


def workload(n_jobs: int, devices: int) -> dict[str, Any]:
    return {"name": f"w{n_jobs}",
            "devices": [{"id": "g", "model": "m", "count": devices, "power_levels": [{"cap_w": 300.0, "speed": 1.0}]}],
            "jobs": jobs(n_jobs), "power": {"budget_w": 300.0 * devices}, "options": {"time_limit_s": 30.0}}


def plan(base: str, document: dict[str, Any]) -> dict[str, Any]:
    created = requests.post(f"{base}/v1/plans", json=document, headers={"Prefer": "respond-async"}, timeout=60)
    created.raise_for_status()
    return wait_final(base, created.headers["Location"])


def answer(response: requests.Response) -> str:
    body = response.json() if response.headers.get("Content-Type", "").endswith("json") else {}
    paths = ", ".join(e.get("path", "") or "<document>" for e in body.get("errors", [])[:3])
    return f"{response.status_code}" + (f" at {paths}" if paths else "")


def night(failures: int) -> dict[str, Any]:
    return {"queue": {"devices": [{"id": "g", "model": "A100-SXM", "count": 1000}],
                      "jobs": [{"id": "a", "work_hours": 1.0, "parallel_fraction": 0.9}],
                      "failures": [{"device": "g", "count": 1, "at_hours": (i % 1100) / 100, "repair_hours": 0.5}
                                   for i in range(failures)]},
            "start": "2026-12-01T22:00", "hours": 12}


def hostile_study() -> dict[str, Any]:
    levels = [{"cap_w": 200.0 + 20 * k, "speed": 0.6 + 0.04 * k} for k in range(10)]
    classes = [{"name": f"c{i}", "priority": ["high", "normal", "low", "low"][i], "arrival_rate_per_hour": 0.5,
                "work_hours": {"mean": 2.0, "scv": 1.0}, "parallel_fraction": 0.9, "devices_per_job": 1}
               for i in range(4)]
    study = {"name": "hostile", "discipline": "preemptive",
             "devices": [{"id": "g", "model": "m", "count": 8, "power_levels": levels}], "classes": classes}
    return {"study": study, "method": "analytic"}


def simulation_study(devices: int, jobs_per_hour: float) -> dict[str, Any]:
    """One class of 2-hour jobs on 2 devices each, simulated: the red team's 298-byte study at 1,000,000 devices."""
    return {"study": {"name": "sim", "discipline": "preemptive",
                      "devices": [{"id": "g", "model": "m", "count": devices,
                                   "power_levels": [{"cap_w": 300.0, "speed": 1.0}]}],
                      "classes": [{"name": "c", "priority": "normal", "arrival_rate_per_hour": jobs_per_hour,
                                   "work_hours": {"mean": 2.0, "scv": 1.0}, "parallel_fraction": 1.0,
                                   "devices_per_job": 2}],
                      # 24 h: met by a run that stops before the queue settles, missed by far in the analysis.
                      "targets": {"c": {"mean_response_hours": 24.0}}},
            "method": "simulation"}


def run(out: Path) -> None:
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        server = LiveServer(database=folder / "plans.db", log=folder / "server.log", workers=1, threads=8)
        server.start()
        base = server.base
        rows: list[dict[str, Any]] = []
        try:
            one = plan(base, workload(1, 4))
            four = plan(base, workload(8, 4))  # more jobs than devices: some wait
            big = plan(base, workload(1000, 1000))
            charted = plan(base, workload(400, 400))  # the most placements a chart draws (MAX_CHART_ROWS)
            print(f"parents: {one['status']}, {four['status']}, {big['status']}, {charted['status']}", flush=True)
            idle = [p["job"] for p in four["plan"]["placements"] if not p["admitted"]]

            def post_replan(parent: dict[str, Any], change: Any) -> requests.Response:
                return requests.post(f"{base}/v1/plans/{parent['id']}/replans", json=change, timeout=120)

            rows.append(measure(server, folder, "re-plan adding 40,000 jobs to a 1-job plan",
                                lambda: answer(post_replan(one, {"add_jobs": jobs(40_000, "n")})), REPEAT_S))
            repairs = {"device": "g", "count": 999_990}
            rows.append(measure(server, folder, "re-plan repairing 999,990 devices of a 4-device group",
                                lambda: answer(post_replan(four, {"device_repairs": [repairs]})), REPEAT_S))
            not_running = {"pin": [idle[0]]} if idle else {"pin": ["j0"], "remove_jobs": []}
            rows.append(measure(server, folder, "re-plan pinning a job the plan does not run",
                                lambda: answer(post_replan(four, not_running)) if idle else "(every job runs)",
                                REPEAT_S))

            def empty_replan() -> str:
                created = requests.post(f"{base}/v1/plans/{big['id']}/replans", data=b"{}",
                                        headers={"Content-Type": "application/json"}, timeout=60)
                body = wait_final(base, created.headers["Location"])
                given, result = stored_mb(folder, body["id"])
                return (f"{created.status_code}, then {body['status']}; stored {given:.2f} MB input (the parent's "
                        f"workload and plan) + {result:.2f} MB result")

            rows.append(measure(server, folder, "2-byte `{}` re-plan of a 1,000-job plan (solved, stored)",
                                empty_replan))
            for n in (1_000, 10_000):
                rows.append(measure(server, folder, f"night with {n:,} device failures",
                                    lambda n=n: answer(requests.post(f"{base}/v1/night-plans", json=night(n),
                                                                     timeout=120)), REPEAT_S))
            alike = workload(2, 4)
            alike["jobs"][1]["id"] = "j0\U000e0020"
            nbsp = workload(2, 4)
            nbsp["jobs"][1]["id"] = "j\u00a00"
            composed = workload(2, 4)
            composed["jobs"][0]["id"], composed["jobs"][1]["id"] = "\u00e9", "e\u0301"
            for label, doc in (("'j0' + U+E0020", alike), ("a no-break space", nbsp), ("'é' twice (NFC)", composed)):
                rows.append(measure(server, folder, f"ids that look alike: {label}",
                                    lambda doc=doc: answer(requests.post(f"{base}/v1/plans", json=doc, timeout=60)),
                                    REPEAT_S))

            def study_and_chart() -> str:
                created = requests.post(f"{base}/v1/queueing-studies", json=hostile_study(), timeout=60)
                if created.status_code != 202:
                    return answer(created)
                body = wait_final(base, created.headers["Location"])
                result = body.get("result") or {}
                png = requests.get(f"{base}{created.headers['Location']}/plot.png", timeout=120)
                points = len(result.get("front", [])) if isinstance(result, dict) else "?"
                return f"202, then {body['status']} ({points} front points stored); plot.png {png.status_code}"

            rows.append(measure(server, folder, "queueing study: 10 power levels, 4 classes without caps",
                                study_and_chart))
            rows.append(measure(server, folder, "298-byte simulation study on 1,000,000 devices",
                                lambda: answer(requests.post(f"{base}/v1/queueing-studies", timeout=60,
                                                             json=simulation_study(1_000_000, 1.0))), REPEAT_S))

            def near_unstable() -> str:
                # 8 devices of speed 1, jobs of 2 h of work on 2 devices (parallel fraction 1: 1 h each): 4 servers
                # of 1 h, so 4 jobs/h is a load of 1.
                created = requests.post(f"{base}/v1/queueing-studies", json=simulation_study(8, 4.0 * 0.999999),
                                        timeout=60)
                if created.status_code != 202:
                    return answer(created)
                body = wait_final(base, created.headers["Location"])
                met = [c.get("meets_target") for c in (body.get("result") or {}).get("classes", [])]
                return f"202, then {body['status']} (target met: {met})"

            rows.append(measure(server, folder, "simulation at load 0.999999", near_unstable))
            cached = requests.get(f"{base}/plans/{four['id']}/placement.png", timeout=60)
            assert cached.status_code == 200, cached.status_code

            def chart_storm(parent: dict[str, Any]) -> Callable[[], str]:
                def storm() -> str:
                    # Rounds of 34 concurrent GETs for at least STORM_S, so that /healthz is probed 100 times or more.
                    url = f"{base}/plans/{parent['id']}/placement.png"
                    codes, ends = [], time.monotonic() + STORM_S
                    with ThreadPoolExecutor(34) as pool:
                        futures = [pool.submit(requests.get, url, timeout=120) for _ in range(34)]
                        time.sleep(0.5)
                        started = time.monotonic()
                        again = requests.get(f"{base}/plans/{four['id']}/placement.png", timeout=120)
                        cached_s = time.monotonic() - started
                        codes += [f.result().status_code for f in futures]
                        while time.monotonic() < ends:
                            futures = [pool.submit(requests.get, url, timeout=120) for _ in range(34)]
                            codes += [f.result().status_code for f in futures]
                    counts = {c: codes.count(c) for c in sorted(set(codes))}
                    return (f"{', '.join(f'{n} x {c}' for c, n in counts.items())}; a cached chart meanwhile: "
                            f"{again.status_code} in {cached_s:.2f} s")
                return storm

            rows.append(measure(server, folder, "34 concurrent GETs of a fresh chart, 400-job plan (the largest drawn)",
                                chart_storm(charted)))
            rows.append(measure(server, folder, "34 concurrent GETs of a fresh chart, 1,000-job plan",
                                chart_storm(big)))

            def sigterm_under_charts() -> str:
                url = f"{base}/v1/plans/{big['id']}/replans"
                with ThreadPoolExecutor(34) as pool:
                    for _ in range(34):
                        pool.submit(requests.get, f"{base}/v1/plans?limit=100", timeout=30)
                        pool.submit(requests.post, url, json={"budget_w": 250_000.0}, timeout=30)
                    time.sleep(0.5)
                    started = time.monotonic()
                    os.kill(server.process.pid, signal.SIGTERM)
                    code = server.process.wait(60)
                    return f"exit code {code} after {time.monotonic() - started:.2f} s"

            stop_row = measure(server, folder, "SIGTERM while re-plans and lists run", sigterm_under_charts)
            rows.append(stop_row)
        finally:
            server.kill()
    write(out, rows, load_start, os.getloadavg())


def write(out: Path, rows: list[dict[str, Any]], load_start: tuple[float, ...], load_end: tuple[float, ...]) -> None:
    lines = [
        "# Issue 25's attacks re-measured (bench/hostile_costs.py)",
        "",
        f"- date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        f"- machine: {os.cpu_count()} cores, {platform.system()}, Python {platform.python_version()}; load average "
        f"{load_start[0]:.1f} at the start, {load_end[0]:.1f} at the end (a machine shared with other work)",
        "- command: `nice -n 10 .venv/bin/python -m bench.hostile_costs`",
        "- server: `optsched serve --workers 1 --threads 8`, default limits (OPTSCHED_MAX_JOBS 5,000, MAX_DEVICES "
        "10,000, MAX_SOLVE_S 3,600, MAX_CHART_ROWS 400, MAX_RESULT_MB 32, CHART_WORKERS 2, CHART_TIMEOUT_S 30)",
        "- CPU: the server's processes (HTTP process, solver and chart processes, with the children they reaped); "
        "memory: peak resident set of the whole process group; disk: growth of the SQLite file and its WAL; "
        "/healthz: a probe every 50 ms during the attack (a failed probe counts as 5,000 ms)",
        "- a refused attack is sent again and again for 3 s (`requests`): wall time, CPU and disk are per request; "
        "a chart storm is rounds of 34 concurrent GETs for 8 s, its figures for the whole storm",
        "",
        "| attack | answer | requests | wall s | CPU s | peak MB | disk MB | /healthz p50 / p99 / max ms (probes) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        if r["cpu_s"] is None:
            lines.append(f"| {r['attack']} | {r['answer']} | {r['requests']} | {r['wall_s']:.2f} | - | "
                         f"{r['peak_mb']:.0f} | - | - |")
            continue
        lines.append(
            f"| {r['attack']} | {r['answer']} | {r['requests']} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | "
            f"{r['peak_mb']:.0f} | {r['disk_mb']:.2f} | {r['p50_ms']:.0f} / {r['p99_ms']:.0f} / {r['max_ms']:.0f} "
            f"({r['probes']}) |"
        )
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=RESULTS_MD)
    run(parser.parse_args().out)


if __name__ == "__main__":
    main()
