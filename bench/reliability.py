"""Reliability figures for bench/results/reliability.md: the seven promises of issue 6, at budgets above CI's.

Each section runs on its own and stores its figures, the command and the date in
bench/results/reliability.json; the Markdown record is rendered from that file after every run.

    .venv/bin/python -m bench.reliability SECTION [SECTION ...]      # or `all`

  fuzz      1. schemathesis over /openapi.json against a real server (positive, negative and stateful cases)
  mutate    1. mutated workloads through the Python API, the CLI and the REST API
  feasible  2. 1,000 hypothesis workloads: every plan verifies, no baseline beats an optimal plan
  limits    3. body size, model size, document shape, queue bound, time limits (HiGHS obeying it or not)
  crash     4. SIGKILLs of the whole server at random moments and inside database writes
  kinds     4. SIGKILLs of the server, its HTTP process or its solver processes with every kind in flight
  load      5. bench/load.py: 60 s, fixed mix, concurrency 32
  memory    6. 2,000 consecutive solves in one service, with and without worker recycling
  access    7. every route without the token, secrets in errors, file modes, ids
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import stat
import sys
import tempfile
import threading
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import requests

from tests.support.polling import poll, poll_url

ROOT = Path(__file__).resolve().parents[1]
RESULTS_JSON = ROOT / "bench" / "results" / "reliability.json"
RESULTS_MD = ROOT / "bench" / "results" / "reliability.md"
WORKLOADS = ROOT / "models" / "workloads"
TOKEN = "bench-token-3c9d61f0a2b84e57"


def _hypothesis(strategy, examples: int, body: Callable[[Any], None]) -> None:
    from hypothesis import HealthCheck, Phase, given, settings

    @given(strategy)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def run(value):
        body(value)

    run()


def _server(folder: Path, name: str, **kwargs) -> Any:
    from tests.support.server import LiveServer

    return LiveServer(database=folder / f"{name}.db", log=folder / f"{name}.log", **kwargs)


# -- 1. bad input ---------------------------------------------------------------------------------------


def section_fuzz(examples: int = 300, stateful: int = 150) -> dict[str, Any]:
    """schemathesis against a real server with solver processes: every operation, positive and negative."""
    import schemathesis
    from schemathesis import GenerationMode
    from schemathesis.config import SchemathesisConfig

    from tests.support.api_testing import CHECKS, SPEC

    schema = schemathesis.openapi.from_dict(SPEC, config=SchemathesisConfig.from_dict({"generation": {"mode": "all"}}))
    auth = {"Authorization": f"Bearer {TOKEN}"}
    statuses: Counter = Counter()
    failures: list[str] = []
    by_operation: Counter = Counter()
    unsatisfiable: list[str] = []
    with tempfile.TemporaryDirectory() as folder:
        env = {
            "OPTSCHED_API_TOKEN": TOKEN,
            "OPTSCHED_QUEUE_SIZE": "1000000",
            "OPTSCHED_SYNC_WAIT_S": "0",
            "OPTSCHED_SOLVE_GRACE_S": "2",
        }
        with _server(Path(folder), "fuzz", workers=2, threads=16, env=env) as server:
            base = server.start()

            def call(case) -> None:
                try:
                    response = case.call(base_url=base, headers=auth, timeout=60)
                    statuses[response.status_code] += 1
                    by_operation[case.operation.label] += 1
                    case.validate_response(response, checks=CHECKS)
                except (Exception, BaseExceptionGroup) as exc:  # noqa: BLE001 - count and go on: the figure is how many
                    failures.append(f"{case.operation.label}: {type(exc).__name__}: {str(exc)[:300]}")

            from hypothesis.errors import Unsatisfiable

            for result in schema.get_all_operations():
                operation = result.ok()
                for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
                    try:
                        _hypothesis(operation.as_strategy(generation_mode=mode), examples, call)
                    except Unsatisfiable:  # nothing to break: an operation without parameters or body
                        unsatisfiable.append(f"{operation.label} {mode.value}")

            machine = schema.as_state_machine()
            steps = Counter()

            class Workflow(machine):  # type: ignore[misc, valid-type]
                def get_call_kwargs(self, case):
                    return {"base_url": base, "headers": auth, "timeout": 60}

                def validate_response(self, response, case, additional_checks=None, **kwargs):
                    steps[response.status_code] += 1
                    try:
                        case.validate_response(response, checks=CHECKS)
                    except (Exception, BaseExceptionGroup) as exc:  # noqa: BLE001
                        failures.append(f"stateful {case.operation.label}: {type(exc).__name__}: {str(exc)[:300]}")

            from hypothesis import HealthCheck, Phase, settings
            from hypothesis.errors import FlakyStrategyDefinition

            # The server's state persists between sequences (listings grow), which hypothesis may call a flaky
            # strategy: run in chunks and go on when it does.
            flaky = 0
            for chunk in range(0, stateful, 25):
                try:
                    Workflow.run(
                        settings=settings(
                            max_examples=min(25, stateful - chunk), stateful_step_count=8, deadline=None,
                            suppress_health_check=list(HealthCheck), database=None, phases=[Phase.generate],
                        )
                    )
                except FlakyStrategyDefinition:
                    flaky += 1
            # What became of the valid documents the fuzzer submitted (solved by the real workers meanwhile).
            time.sleep(5)
            plans = Counter()
            with sqlite3.connect(server.database) as db:
                for kind, status, error, n in db.execute(
                    "SELECT kind, COALESCE(verdict, status) AS shown, error, COUNT(*) FROM plans "
                    "GROUP BY kind, shown, error"
                ):
                    plans[f"{kind} {status}"] += n
                    if status == "failed":
                        failures.append(f"{n} {kind} failed: {error}")
            log = server.log.read_text(errors="replace")
    return {
        "requests": sum(statuses.values()) + sum(steps.values()),
        "stateless_requests": sum(statuses.values()),
        "stateful_requests": sum(steps.values()),
        "examples_per_operation_and_mode": examples,
        "stateful_examples": stateful,
        "stateful_chunks_cut_short_by_server_state": flaky,
        "operations": dict(by_operation),
        "no_negative_cases_possible": unsatisfiable,
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "stateful_statuses": {str(k): v for k, v in sorted(steps.items())},
        "server_errors_5xx": sum(v for k, v in statuses.items() if k >= 500)
        + sum(v for k, v in steps.items() if k >= 500),
        "check_failures": len(failures),
        "failure_examples": failures[:10],
        "plans_submitted_by_the_fuzzer": dict(plans),
        "tracebacks_in_server_log": log.count("Traceback (most recent call last)"),
    }


def section_mutate(examples: int = 2000) -> dict[str, Any]:
    """The hypothesis mutations of tests/reliability/test_bad_input.py, `examples` of them, counted by kind."""
    from api import create_app, shutdown
    from tests.support.interfaces import check_everywhere
    from tests.support.mutations import mutants

    outcomes: Counter = Counter()
    failures: list[str] = []
    with tempfile.TemporaryDirectory() as folder:
        app = create_app(
            {"DATABASE_URL": f"sqlite:///{folder}/plans.db", "START_WORKERS": False, "SYNC_WAIT_S": 0,
             "QUEUE_SIZE": 10_000_000, "API_TOKEN": None, "AUTH": "off"}
        )
        client = app.test_client()

        def body(mutant) -> None:
            try:
                outcomes[(mutant.kind, check_everywhere(mutant, client, Path(folder)))] += 1
            except Exception as exc:  # noqa: BLE001
                outcomes[(mutant.kind, "FAILED")] += 1
                failures.append(f"{mutant.kind} at {mutant.path}: {type(exc).__name__}: {str(exc)[:300]}")

        try:
            _hypothesis(mutants(), examples, body)
        finally:
            shutdown(app)
    by_kind: dict[str, dict[str, int]] = {}
    for (kind, outcome), n in sorted(outcomes.items()):
        by_kind.setdefault(kind, {})[outcome] = n
    return {
        "examples": sum(outcomes.values()),
        "by_kind": by_kind,
        "rejected": sum(n for (k, o), n in outcomes.items() if o == "rejected"),
        "planned_and_verified": sum(n for (k, o), n in outcomes.items() if o not in ("rejected", "FAILED")),
        "failures": len(failures),
        "failure_examples": failures[:10],
    }


# -- 2. feasibility -------------------------------------------------------------------------------------


def section_feasible(examples: int = 1000) -> dict[str, Any]:
    from optsched.schema.plan import Status
    from optsched.testing.feasibility import check_plan_and_baselines
    from tests.support.factories import tiny_workloads

    statuses: Counter = Counter()
    compared: Counter = Counter()
    best_ratio: dict[str, float] = {}
    failures: list[str] = []

    def body(workload) -> None:
        try:
            plan, baselines = check_plan_and_baselines(workload)
        except Exception as exc:  # noqa: BLE001
            failures.append(f"{type(exc).__name__}: {str(exc)[:300]} :: {json.dumps(workload)[:500]}")
            return
        statuses[f"{workload['objective']}: {plan.status.value}"] += 1
        if plan.status != Status.optimal:
            return
        for name, result in baselines.items():
            if not result.feasible:
                continue
            compared[name] += 1
            if workload["objective"] == "weighted_speedup" and plan.weighted_speedup > 0:
                ratio = result.weighted_speedup / plan.weighted_speedup
            elif workload["objective"] == "min_power" and result.power_w > 0:
                ratio = plan.power_w / result.power_w
            else:
                continue
            best_ratio[name] = max(best_ratio.get(name, 0.0), ratio)

    _hypothesis(tiny_workloads(max_jobs=8, max_groups=3, max_count=8), examples, body)
    return {
        "workloads": sum(statuses.values()) + len(failures),
        "statuses": dict(sorted(statuses.items())),
        "optimal_plans_compared_with_feasible_baselines": dict(compared),
        "best_baseline_relative_to_optimal": {k: round(v, 6) for k, v in best_ratio.items()},
        "failures": len(failures),
        "failure_examples": failures[:5],
    }


# -- 3. limits --------------------------------------------------------------------------------------------


def section_limits(repeats: int = 3) -> dict[str, Any]:
    from pydantic import ValidationError

    from api import create_app, services, shutdown
    from api.services import EXTENSION, Services
    from optsched.infra.pool import ProcessPool
    from optsched.schema.workload import Workload, field_errors
    from optsched.service.kinds import runner
    from optsched.testing import solvers
    from optsched.testing.instances import generate

    out: dict[str, Any] = {}
    tiny = json.loads((WORKLOADS / "tiny.json").read_text())
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        with _server(folder, "limits", workers=1, threads=16, env={"OPTSCHED_SOLVE_GRACE_S": "1"}) as server:
            base = server.start()
            # body size: 11 MiB against the default 10 MiB
            body = json.dumps({**tiny, "name": "x" * (11 * 2**20)})
            started = time.perf_counter()
            response = requests.post(
                f"{base}/v1/plans", data=body, headers={"Content-Type": "application/json"}, timeout=60
            )
            out["body_11_mib"] = {"status": response.status_code, "ms": round((time.perf_counter() - started) * 1e3, 1)}
            # model size: 5,001 jobs x 100 groups x 4 levels = 2,000,400 variables > 2,000,000
            big = {
                "devices": [
                    {"id": f"g{g}", "model": "m", "count": 1,
                     "power_levels": [{"cap_w": 100 + 10 * k, "speed": 1 + 0.1 * k} for k in range(4)]}
                    for g in range(100)
                ],
                "jobs": [{"id": f"j{j}", "work_hours": 1, "parallel_fraction": 0.9} for j in range(5001)],
            }
            started = time.perf_counter()
            response = requests.post(f"{base}/v1/plans", json=big, timeout=60)
            out["variables_2000400"] = {
                "status": response.status_code,
                "ms": round((time.perf_counter() - started) * 1e3, 1),
                "message": response.json()["errors"][0]["message"]
                if response.status_code == 422
                else response.text[:200],
            }
            # document shape: 4,000,000 wrong items (8 MB), rejected at once; and what validating them costs
            flood = json.dumps({**tiny, "jobs": [1] * 4_000_000}, separators=(",", ":"))
            started = time.perf_counter()
            response = requests.post(
                f"{base}/v1/plans", data=flood, headers={"Content-Type": "application/json"}, timeout=120
            )
            elapsed = time.perf_counter() - started
            healthz = _time_get(f"{base}/healthz")
            out["flood_4m_items"] = {
                "status": response.status_code,
                "ms": round(elapsed * 1e3, 1),
                "body_mb": round(len(flood) / 1e6, 1),
                "errors_listed": len(response.json().get("errors", [])) if response.status_code == 422 else None,
                "healthz_ms_right_after": healthz,
            }
            one_million = {**tiny, "jobs": [1] * 1_000_000}
            started = time.perf_counter()
            try:
                Workload.model_validate(one_million)
            except ValidationError as exc:
                listed = field_errors(exc)
            out["validating_1m_wrong_items_without_the_guard_s"] = round(time.perf_counter() - started, 2)
            out["errors_listed_for_1m_wrong_items"] = len(listed)
            # time limits: a hard workload given 2 s, through the real server
            hard = generate("T", 0, options={"time_limit_s": 2.0, "mip_gap": 0.0}).model_dump(mode="json")
            runs = []
            for _ in range(repeats):
                response = requests.post(f"{base}/v1/plans", json=hard, headers={"Prefer": "respond-async"}, timeout=30)
                final = poll_url(base + response.headers["Location"])
                runs.append((final["status"], _seconds(final)))
            out["time_limit_2s_real_highs"] = {
                "statuses": [s for s, _ in runs],
                "solve_s": [round(t, 2) for _, t in runs],
                "grace_s": 1.0,
            }
        # queue bound: 40 concurrent POSTs, queue of 16, no workers
        app = create_app({"DATABASE_URL": f"sqlite:///{folder}/queue.db", "START_WORKERS": False, "QUEUE_SIZE": 16,
                          "SYNC_WAIT_S": 0, "API_TOKEN": None, "AUTH": "off"})
        codes: Counter = Counter()
        retry: set[str] = set()

        def post() -> None:
            response = app.test_client().post("/v1/plans", json=tiny)
            codes[response.status_code] += 1
            if response.status_code == 503:
                retry.add(response.headers.get("Retry-After", "missing"))

        threads = [threading.Thread(target=post) for _ in range(40)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        stored = len(app.test_client().get("/v1/plans", query_string={"limit": 100}).get_json()["items"])
        shutdown(app)
        out["queue_16_40_concurrent"] = {"statuses": dict(codes), "retry_after": sorted(retry), "stored": stored}
        # time limits when HiGHS ignores its own: the pool kills at 2 s + 1 s grace
        app = create_app({"DATABASE_URL": f"sqlite:///{folder}/kill.db", "START_WORKERS": False, "API_TOKEN": None,
                          "AUTH": "off",
                          "SYNC_WAIT_S": 0})
        store = services(app).store
        pool = ProcessPool(store, workers=1, grace_s=1.0, runner=runner(solvers.ignore_time_limit))
        app.extensions[EXTENSION] = Services(store=store, queue=pool)
        pool.start()
        client = app.test_client()
        runs = []
        for _ in range(repeats):
            response = client.post("/v1/plans", json=hard, headers={"Prefer": "respond-async"})
            final = poll(client, response.headers["Location"])
            runs.append((final["status"], _seconds(final)))
        shutdown(app)
        out["time_limit_2s_highs_ignoring_it"] = {
            "statuses": [s for s, _ in runs],
            "solve_s": [round(t, 2) for _, t in runs],
            "grace_s": 1.0,
        }
    return out


def _time_get(url: str) -> float:
    started = time.perf_counter()
    requests.get(url, timeout=30)
    return round((time.perf_counter() - started) * 1e3, 1)


def _seconds(resource: dict) -> float:
    return (
        datetime.fromisoformat(resource["finished_at"]) - datetime.fromisoformat(resource["started_at"])
    ).total_seconds()


# -- 4. crashes --------------------------------------------------------------------------------------------


def section_crash(runs: int = 3, workloads: int = 100, kills: int = 10) -> dict[str, Any]:
    from tests.support.crash import run_crash_scenario

    reports = []
    with tempfile.TemporaryDirectory() as folder:
        for seed in range(runs):
            r = run_crash_scenario(Path(folder) / f"run{seed}", workloads=workloads, kills=kills, seed=100 + seed,
                                   drain_s=180)
            reports.append(r)
            print(f"  crash run {seed}: ok={r.ok} kills={r.kills} in writes={r.failpoint_kills} "
                  f"requeued={r.requeued_at_restart} statuses={dict(r.statuses)} {r.seconds:.0f} s", flush=True)
    return {
        "runs": runs,
        "workloads_per_run": workloads,
        "kills": sum(r.kills for r in reports),
        "kills_inside_database_writes": sum(r.failpoint_kills for r in reports),
        "kills_while_solving": sum(r.kills_while_solving for r in reports),
        "plans_requeued_at_restarts": sum(r.requeued_at_restart for r in reports),
        "requests_cut_by_kills_then_retried": sum(r.post_errors for r in reports),
        "accepted": sum(r.accepted for r in reports),
        "final_with_verified_plan": sum(sum(r.statuses.values()) - len(r.unverified) for r in reports),
        "statuses": dict(sum((r.statuses for r in reports), Counter())),
        "rows_in_database": sum(r.rows for r in reports),
        "integrity_check": sorted({r.integrity for r in reports}),
        "all_ok": all(r.ok for r in reports),
        "seconds": round(sum(r.seconds for r in reports), 1),
    }


# The kill of each cycle, in turn: the whole process group (a `kill -9` of the container), the HTTP process alone
# (the supervisor forks a new one, which requeues what the old one left), the solver processes alone (the pool
# replaces them and requeues their solves), and the whole group from inside a database commit (api/failpoints.py).
KILL_MODES = ("server", "http", "solvers", "commit")


def section_kinds(cycles: int = 8, seed: int = 25) -> dict[str, Any]:
    """Issue 25: nothing lost across SIGKILLs of each kind of process, with a resource of every kind in flight.

    Each cycle POSTs (each with its Idempotency-Key, retried across the kill until accepted) a plan, a night plan,
    a frontier, a queueing study (a simulation), a re-plan of a finished plan and a synchronous /v1/verify, waits
    until one of them solves (at most 20 s), 0-1 s more, and kills (KILL_MODES in turn). At the end every
    accepted resource must be final (not lost, not stuck), each result verified where a verifier exists (plans and
    re-plans: optsched.verify.placement, nights: optsched.verify.timeline; a frontier's points carry no plan, so
    final with its points), one row per accepted resource, and PRAGMA integrity_check ok."""
    import random
    import signal

    from api.examples import BODIES
    from optsched.verify.placement import verify
    from optsched.verify.timeline import verify_timeline
    from tests.support.crash import FAILPOINT_SERVER, crash_workloads

    rng = random.Random(seed)
    plans = crash_workloads(cycles + 1, seed)
    study = {**BODIES["createQueueingStudy"], "method": "simulation"}
    documents = {
        "night": ("/v1/night-plans", BODIES["createNightPlan"]),
        "frontier": ("/v1/frontiers", BODIES["createFrontier"]),
        "queueing": ("/v1/queueing-studies", study),
    }
    accepted: dict[str, tuple[str, Any]] = {}  # location -> (kind, what to verify it against)
    in_flight_at_kill: Counter[str] = Counter()
    kills: Counter[str] = Counter()
    verifications: Counter[str] = Counter()
    retried = 0
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as folder:
        server = _server(Path(folder), "kinds", workers=2, command=FAILPOINT_SERVER,
                         env={"OPTSCHED_SYNC_WAIT_S": "0"})
        base = server.start()
        restarting = threading.Lock()
        failpoint_kills = 0

        def restart_if_dead() -> None:
            """A server that killed itself at its failpoint is started again (plain), once, whoever notices."""
            nonlocal failpoint_kills
            with restarting:
                if not server.alive():
                    failpoint_kills += 1
                    server.kill()
                    server.start()

        def post(path: str, body: Any, key: str, deadline_s: float = 120) -> requests.Response:
            """POST until the service answers (a kill cuts requests; the key makes the retry the same request)."""
            nonlocal retried
            deadline = time.monotonic() + deadline_s
            while True:
                try:
                    return requests.post(f"{server.base}{path}", json=body, timeout=60,
                                         headers={"Idempotency-Key": key, "Prefer": "respond-async"})
                except requests.RequestException:
                    retried += 1
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
                    restart_if_dead()

        try:
            parent = poll_url(base + post("/v1/plans", plans[0], "parent").headers["Location"])
            assert parent["status"] in ("optimal", "time_limit"), parent["status"]
            for cycle in range(cycles):
                mode = KILL_MODES[cycle % len(KILL_MODES)]
                if mode == "commit":  # the next server kills itself at one of its first commits
                    with restarting:
                        server.kill()
                        try:
                            server.start(env={"OPTSCHED_TEST_KILL_AT": f"commit:{rng.randint(2, 12)}"})
                        except RuntimeError:  # it killed itself in recovery's own commits
                            failpoint_kills += 1
                            server.kill()
                            server.start()
                submissions = [("plan", "/v1/plans", plans[cycle + 1], plans[cycle + 1]),
                               ("replan", f"/v1/plans/{parent['id']}/replans", {}, None)]
                submissions += [(kind, path, body, body) for kind, (path, body) in documents.items()]
                checker = threading.Thread(
                    target=lambda c=cycle: verifications.update(
                        [str(post("/v1/verify", BODIES["verifyPlan"], f"verify-{c}").status_code)]))
                checker.start()
                for kind, path, body, against in submissions:
                    response = post(path, body, f"{kind}-{cycle}")
                    if response.status_code in (200, 201, 202):
                        accepted[response.headers["Location"]] = (kind, against)
                # The kill lands while a solve runs: up to 20 s for one to start, then 0-1 s into it.
                waited = time.monotonic() + 20
                while time.monotonic() < waited and "solving" not in _states(server, accepted).values():
                    time.sleep(0.05)
                time.sleep(rng.uniform(0.0, 1.0))
                for location, state in _states(server, accepted).items():
                    if state in ("queued", "solving"):
                        in_flight_at_kill[f"{accepted[location][0]} {state}"] += 1
                pids = server.pids()
                if mode in ("server", "commit"):
                    with restarting:
                        failpoint_kills += mode == "commit" and not server.alive()
                        server.kill()
                        server.start()
                else:
                    for pid in pids["http"] if mode == "http" else pids["solvers"]:
                        try:
                            os.kill(pid, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                kills[mode] += 1
                checker.join(180)
            deadline = time.monotonic() + 300
            finals = {}
            for location in accepted:
                finals[location] = _poll_tolerant(server, location, deadline)
        finally:
            server.kill()
        statuses: Counter[str] = Counter()
        lost, unverified = [], []
        for location, (kind, against) in accepted.items():
            body = finals.get(location) or {}
            status = body.get("status", "missing")
            statuses[f"{kind} {status}"] += 1
            if status in ("missing", "queued", "solving"):
                lost.append(location)
                continue
            if not _verified(kind, body, against, verify, verify_timeline):
                unverified.append(f"{location} ({status}: {body.get('error')})")
        with sqlite3.connect(Path(folder) / "kinds.db") as db:
            rows = db.execute("SELECT COUNT(*) FROM plans").fetchone()[0]
            integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
    return {
        "cycles": cycles,
        "kills": dict(kills),
        "kills_inside_a_commit": failpoint_kills,
        "resources_in_flight_at_the_kills": dict(sorted(in_flight_at_kill.items())),
        "accepted": len(accepted) + 1,  # and the parent plan
        "lost": len(lost),
        "lost_ids": lost,
        "final_statuses": dict(sorted(statuses.items())),
        "not_verified": unverified,
        "verifications_answered": dict(verifications),
        "requests_cut_by_kills_then_retried": retried,
        "rows_in_database": rows,
        "integrity_check": integrity,
        "seconds": round(time.monotonic() - started, 1),
    }


def _states(server: Any, accepted: dict[str, tuple[str, Any]]) -> dict[str, str]:
    """Each accepted resource's status now (those the server did not answer for are left out)."""
    out = {}
    with requests.Session() as session:
        for location in accepted:
            try:
                out[location] = session.get(f"{server.base}{location}", timeout=10).json()["status"]
            except (requests.RequestException, ValueError, KeyError):
                continue
    return out


def _poll_tolerant(server: Any, location: str, deadline: float) -> dict[str, Any]:
    """The resource once final (or as it is at `deadline`), riding out a server restarting."""
    body: dict[str, Any] = {}
    while time.monotonic() < deadline:
        try:
            response = requests.get(f"{server.base}{location}", timeout=10)
        except requests.RequestException:
            time.sleep(0.2)
            continue
        if response.status_code == 404:
            return {}
        body = response.json()
        if body.get("status") not in ("queued", "solving"):
            return body
        time.sleep(0.2)
    return body


def _verified(kind: str, body: dict[str, Any], against: Any, verify: Callable, verify_timeline: Callable) -> bool:
    """The kind's result passes its verifier (a resource that ended without a result is not verified)."""
    if kind == "plan":
        return body.get("plan") is not None and verify(against, body["plan"]) == []
    if kind == "replan":
        result = body.get("replan")
        return result is not None and verify(result["workload"], result["plan"]) == []
    if kind == "night":
        return body.get("night_plan") is not None and verify_timeline(against["queue"], body["night_plan"]) == []
    if kind == "frontier":
        return bool((body.get("frontier") or {}).get("points"))
    return body.get("result") is not None


# -- 5. load ------------------------------------------------------------------------------------------------


def section_load(seconds: float = 60.0) -> dict[str, Any]:
    from bench.load import run

    return {"full": run(seconds=seconds, concurrency=32, mix="full"),
            "small": run(seconds=seconds, concurrency=32, mix="small")}


# -- 6. memory ----------------------------------------------------------------------------------------------


def section_memory(solves: int = 2000) -> dict[str, Any]:
    return {
        "with_recycling": _memory_run(solves, max_solves_per_worker=50),
        "without_recycling": _memory_run(solves, max_solves_per_worker=10**9),
    }


def _memory_workload(i: int) -> dict[str, Any]:
    """Consecutive solves of three sizes: tiny.json, a 20-job instance (S), and every 25th a 200-job one (M)."""
    from optsched.testing.instances import generate

    if i % 25 == 24:
        return generate("M", i, options={"time_limit_s": 2.0}).model_dump(mode="json", exclude_defaults=True)
    if i % 2:
        return generate("S", i, options={"time_limit_s": 5.0}).model_dump(mode="json", exclude_defaults=True)
    tiny = json.loads((WORKLOADS / "tiny.json").read_text())
    tiny["jobs"][1]["work_hours"] = 1 + i % 7
    return tiny


def _memory_run(solves: int, max_solves_per_worker: int) -> dict[str, Any]:
    from tests.support.server import rss_mb

    env = {"OPTSCHED_MAX_SOLVES_PER_WORKER": str(max_solves_per_worker), "OPTSCHED_SYNC_WAIT_S": "30"}
    lives: dict[int, dict[str, float]] = {}  # solver pid -> first/last/max RSS
    timeline: list[tuple[int, float]] = []
    statuses: Counter = Counter()
    started = time.monotonic()
    with (
        tempfile.TemporaryDirectory() as folder,
        _server(Path(folder), "memory", workers=1, threads=8, env=env) as server,
    ):
        base = server.start()
        http_pid = server.pids()["http"][0]
        http_before = rss_mb(http_pid)
        session = requests.Session()
        for i in range(solves):
            response = session.post(f"{base}/v1/plans", json=_memory_workload(i), timeout=120)
            body = response.json()
            if body.get("status") in ("queued", "solving"):
                body = poll_url(base + response.headers["Location"])
            statuses[body.get("status")] += 1
            peak = 0.0
            for pid in server.pids()["solvers"]:
                rss = rss_mb(pid)
                if rss is None:
                    continue
                life = lives.setdefault(pid, {"first": rss, "max": rss, "solves": 0})
                life["last"], life["max"] = rss, max(life["max"], rss)
                life["solves"] += 1
                peak = max(peak, rss)
            if i % 50 == 49:
                timeline.append((i + 1, round(peak, 1)))
        http_after = rss_mb(http_pid)
    firsts = sorted(life["first"] for life in lives.values())
    maxima = sorted(life["max"] for life in lives.values())
    return {
        "solves": solves,
        "max_solves_per_worker": max_solves_per_worker,
        "statuses": dict(statuses),
        "solver_processes": len(lives),
        "rss_after_first_solve_mb": {"min": round(firsts[0], 1), "max": round(firsts[-1], 1)},
        "rss_peak_per_process_mb": {"min": round(maxima[0], 1), "median": round(maxima[len(maxima) // 2], 1),
                                    "max": round(maxima[-1], 1)},
        "solver_rss_every_50_solves_mb": timeline,
        "http_process_rss_mb": {"before": round(http_before, 1), "after": round(http_after, 1)},
        "seconds": round(time.monotonic() - started, 1),
    }


# -- 7. access ----------------------------------------------------------------------------------------------


def section_access(ids: int = 10_000) -> dict[str, Any]:
    from api import create_app, shutdown
    from tests.support.api_testing import GOOD, PUBLIC_PREFIXES, WRONG, protected_routes, url_for_rule

    tiny = json.loads((WORKLOADS / "tiny.json").read_text())
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        app = create_app({"DATABASE_URL": f"sqlite:///{folder}/a.db", "START_WORKERS": False, "API_TOKEN": TOKEN,
                          "QUEUE_SIZE": ids + 10, "SYNC_WAIT_S": 0, "AUTH_FAILURE_BURST": 10**9})
        client = app.test_client()
        authorized = GOOD | {"Authorization": f"Bearer {TOKEN}"}
        plan_id = client.post("/v1/plans", json=tiny, headers=authorized).get_json()["id"]
        routes = protected_routes(app)
        answers: Counter = Counter()
        leaks = 0
        for method, _, endpoint in routes:
            for headers in WRONG.values():
                response = client.open(url_for_rule(app, endpoint, plan_id), method=method, headers=headers, json=tiny)
                answers[response.status_code] += 1
                leaks += TOKEN in response.get_data(as_text=True)
        public = sorted({str(r) for r in app.url_map.iter_rules() if str(r).startswith(PUBLIC_PREFIXES)})
        created = [
            client.post("/v1/plans", json=tiny, headers={"Authorization": f"Bearer {TOKEN}"}).get_json()["id"]
            for _ in range(ids)
        ]
        shutdown(app)
        versions = Counter(uuid.UUID(hex=i).version for i in created)
        out["protected_routes"] = sorted({f"{m} {r}" for m, r, _ in routes})
        out["requests_without_a_valid_token"] = sum(answers.values())
        out["answers"] = {str(k): v for k, v in answers.items()}
        out["token_echoed"] = leaks
        out["public_routes"] = public
        out["ids"] = {"created": len(created), "distinct": len(set(created)), "uuid_versions": dict(versions)}
        with _server(Path(folder), "private", command=["/bin/sh", "-c", 'umask 000 && exec "$0" serve "$@"',
                                                         str(Path(sys.executable).with_name("optsched"))]) as server:
            server.database = Path(folder) / "new" / "var" / "plans.db"
            base = server.start()
            requests.post(f"{base}/v1/plans", json=tiny, timeout=30)
            out["sqlite_modes_umask_000"] = {
                p.name: oct(stat.S_IMODE(p.stat().st_mode))
                for p in (server.database, Path(f"{server.database}-wal"), Path(f"{server.database}-shm"),
                          server.database.parent)
                if p.exists()
            }
    return out


SECTIONS: dict[str, Callable[[], dict[str, Any]]] = {
    "fuzz": section_fuzz,
    "mutate": section_mutate,
    "feasible": section_feasible,
    "limits": section_limits,
    "crash": section_crash,
    "kinds": section_kinds,
    "load": section_load,
    "memory": section_memory,
    "access": section_access,
}


def machine() -> str:
    cpu = platform.processor() or "unknown"
    if Path("/proc/cpuinfo").exists():
        models = [line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")]
        cpu = models[0] if models else cpu
    return f"{os.cpu_count()} cores ({cpu}), {platform.system()}, Python {platform.python_version()}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sections", nargs="+", choices=[*SECTIONS, "all", "render"])
    args = parser.parse_args(argv)
    names = list(SECTIONS) if "all" in args.sections else [s for s in args.sections if s != "render"]
    results = json.loads(RESULTS_JSON.read_text()) if RESULTS_JSON.exists() else {}
    for name in names:
        print(f"== {name}", flush=True)
        load = os.getloadavg()[0]
        started = time.monotonic()
        try:
            figures = SECTIONS[name]()
        except (Exception, BaseExceptionGroup):  # noqa: BLE001 - record that the section could not run, and why
            figures = {"error": traceback.format_exc()}
        results[name] = {
            "date": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
            "command": f".venv/bin/python -m bench.reliability {name}",
            "machine": machine(),
            "load_average_at_start": round(load, 2),
            "seconds": round(time.monotonic() - started, 1),
            "figures": figures,
        }
        print(json.dumps(results[name], indent=2), flush=True)
        RESULTS_JSON.write_text(json.dumps(results, indent=2) + "\n")
    RESULTS_MD.write_text(render(results))


def render(results: dict[str, Any]) -> str:
    """bench/results/reliability.md from the stored figures (a section not run yet says so)."""
    lines = [
        "# Reliability record (issue 6)",
        "",
        "Seven promises, each with the test in `make test` that fails if it is broken (bounded for CI) and the figure "
        "from a larger run here. Every section was produced by `bench/reliability.py` (the raw figures are in "
        "`bench/results/reliability.json`) on a 2-core machine shared with other jobs; the command, the date and the "
        "1-minute load average at its start are given with each. README.md (\"Reliability and security\") says which "
        "test proves which promise.",
        "",
    ]
    for title, name, body in _SECTIONS_MD:
        lines += [f"## {title}", ""]
        entry = results.get(name)
        if entry is None:
            lines += ["Not run yet.", ""]
            continue
        figures = entry["figures"]
        if "error" in figures:
            lines += ["The run failed:", "", "```", figures["error"].strip()[-3000:], "```", ""]
        else:
            lines += body(figures)
        lines += [
            f"`{entry['command']}` - {entry['date']}, {entry['seconds']:g} s, load average "
            f"{entry['load_average_at_start']} at the start; {entry['machine']}.",
            "",
        ]
    return "\n".join(lines)


def _table(rows: list[tuple], header: tuple) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out + [""]


def _md_fuzz(f: dict[str, Any]) -> list[str]:
    return [
        f"schemathesis against a real `optsched serve` (2 solver processes, token set): every operation of "
        f"/openapi.json, {f['examples_per_operation_and_mode']} positive and {f['examples_per_operation_and_mode']} "
        f"negative (schema-violating) cases each, then {f['stateful_examples']} stateful sequences "
        "(POST -> GET/DELETE through links). Checks: no 5xx, every error a problem+json document, no traceback, "
        "source path or token in any response.",
        "",
        *_table(
            [
                (
                    "requests sent",
                    f"{f['requests']:,} ({f['stateless_requests']:,} stateless, {f['stateful_requests']:,} stateful)",
                ),
                ("status codes", ", ".join(f"{k}: {v:,}" for k, v in f["statuses"].items())),
                ("5xx", f["server_errors_5xx"]),
                ("check failures", f["check_failures"]),
                ("tracebacks in the server log", f["tracebacks_in_server_log"]),
                (
                    "plans the fuzzer submitted, by final status",
                    ", ".join(f"{k}: {v}" for k, v in f["plans_submitted_by_the_fuzzer"].items()),
                ),
            ],
            ("figure", "value"),
        ),
    ]


def _md_mutate(f: dict[str, Any]) -> list[str]:
    rows = [(kind, ", ".join(f"{k}: {v}" for k, v in outcomes.items())) for kind, outcomes in f["by_kind"].items()]
    return [
        f"{f['examples']:,} hypothesis-mutated workloads, each through `optsched.plan`, `optsched plan` and POST "
        "/v1/plans (tests/support/interfaces.py): rejected means InvalidWorkload listing the changed path, exit 2 "
        "with the paths on stderr and no traceback, and a 4xx problem+json (422 with the same paths as the Python "
        "API); otherwise the plan of each interface passes the verifier.",
        "",
        *_table(rows, ("mutation", "outcome (count)")),
        f"Rejected {f['rejected']:,}, planned and verified {f['planned_and_verified']:,}, failures {f['failures']}.",
        "",
    ]


def _md_feasible(f: dict[str, Any]) -> list[str]:
    compared = ", ".join(f"{k}: {v}" for k, v in f["optimal_plans_compared_with_feasible_baselines"].items())
    best = ", ".join(f"{k}: {v:g}" for k, v in f["best_baseline_relative_to_optimal"].items())
    return [
        f"{f['workloads']:,} hypothesis workloads (tests.support.factories.tiny_workloads: up to 8 jobs, 3 groups, "
        "8 devices each, every feature at random, both objectives) through `optsched.plan`; each plan and each "
        "baseline's plan through the verifier; every `optimal` plan compared with each feasible baseline of "
        "`optsched.baselines.BASELINES`; every `infeasible` verdict checked against the baselines.",
        "",
        *_table(
            [
                ("plans by objective and status", ", ".join(f"{k}: {v}" for k, v in f["statuses"].items())),
                ("optimal plans compared with a feasible baseline", compared),
                ("best baseline / optimal (speedup; for min_power optimal W / baseline W)", best),
                ("plans or baselines the verifier rejected, baselines beating an optimal plan", f["failures"]),
            ],
            ("figure", "value"),
        ),
    ]


def _md_limits(f: dict[str, Any]) -> list[str]:
    real, ignored = f["time_limit_2s_real_highs"], f["time_limit_2s_highs_ignoring_it"]
    flood = f["flood_4m_items"]
    return _table(
        [
            ("body of 11 MiB (limit 10 MiB)", f"{f['body_11_mib']['status']} in {f['body_11_mib']['ms']} ms"),
            (
                "5,001 jobs x 100 groups x 4 levels = 2,000,400 variables (limit 2,000,000)",
                f'{f["variables_2000400"]["status"]} in {f["variables_2000400"]["ms"]} ms: '
                f'"{f["variables_2000400"]["message"]}"',
            ),
            (
                f"4,000,000 wrong items in `jobs` ({flood['body_mb']} MB)",
                f"{flood['status']} in {flood['ms']} ms listing {flood['errors_listed']} problem; /healthz right "
                f"after: {flood['healthz_ms_right_after']} ms",
            ),
            (
                "1,000,000 wrong items validated by pydantic alone, no guard (in process; 14 s before problems "
                "were capped at 100)",
                f"{f['validating_1m_wrong_items_without_the_guard_s']} s, "
                f"{f['errors_listed_for_1m_wrong_items']} entries listed",
            ),
            (
                "40 concurrent POSTs, queue bound 16, no solver running",
                f"{f['queue_16_40_concurrent']['statuses']}, Retry-After "
                f"{', '.join(f['queue_16_40_concurrent']['retry_after'])} s, "
                f"{f['queue_16_40_concurrent']['stored']} stored",
            ),
            (
                f"hard workload (size T, gap 0) given 2 s, real server, grace {real['grace_s']:g} s",
                f"{', '.join(real['statuses'])}; solve {', '.join(f'{s:g}' for s in real['solve_s'])} s",
            ),
            (
                f"the same with HiGHS told 200 s (ignores the 2 s), grace {ignored['grace_s']:g} s",
                f"{', '.join(ignored['statuses'])}; killed after {', '.join(f'{s:g}' for s in ignored['solve_s'])} s",
            ),
        ],
        ("limit", "what happened"),
    )


def _md_crash(f: dict[str, Any]) -> list[str]:
    return [
        f"{f['runs']} runs of tests/support/crash.py, {f['workloads_per_run']} workloads each, the whole server "
        "process group SIGKILLed again and again and restarted on the same SQLite file.",
        "",
        *_table(
            [
                ("kills (SIGKILL of the supervisor, HTTP process and solver processes)", f["kills"]),
                (
                    "... of which inside a database write (failpoint at a random commit or INSERT/UPDATE)",
                    f["kills_inside_database_writes"],
                ),
                (
                    "... of which while a plan was solving",
                    f"{f['kills_while_solving']} (at least; the others at random moments)",
                ),
                ("plans requeued at restarts", f["plans_requeued_at_restarts"]),
                (
                    "requests cut by a kill, then retried with their Idempotency-Key",
                    f["requests_cut_by_kills_then_retried"],
                ),
                ("workloads accepted (201/202)", f["accepted"]),
                ("accepted and final with a plan the verifier passes", f["final_with_verified_plan"]),
                ("final statuses", ", ".join(f"{k}: {v}" for k, v in f["statuses"].items())),
                ("rows in the database (one per workload: no duplicate from the retries)", f["rows_in_database"]),
                ("PRAGMA integrity_check", ", ".join(f["integrity_check"])),
            ],
            ("figure", "value"),
        ),
    ]


def _md_load(f: dict[str, Any]) -> list[str]:
    runs = [f[m] for m in ("full", "small") if m in f]
    first = runs[0]

    def row(label: str, cell) -> tuple:
        return (label, *(cell(r) for r in runs))

    return [
        f"bench/load.py: {first['seconds']:g} s on loopback per mix, concurrency {first['concurrency']}, "
        f"{first['workers']} solver processes, {first['http_threads']} HTTP threads. The full mix (the promise's) "
        "sends 10 % demo solves of 2 s each, more than two solver processes can finish, so that every solver is "
        "busy and small plans wait behind them in the FIFO queue; the small mix leaves them out.",
        "",
        *_table(
            [
                row("requests", lambda r: f"{r['requests']:,}"),
                row("requests by kind", lambda r: ", ".join(f"{k} {v:,}" for k, v in r["requests_by_kind"].items())),
                row("errors (anything but the expected answer)", lambda r: r["errors"]),
                row("deliberate 503 (queue full; Retry-After honoured)", lambda r: r["deliberate_503"]),
                row(
                    "small synchronous plans (answered 201 at once)",
                    lambda r: f"{r['small_plans']} ({r['small_plans_201']})",
                ),
                row(
                    "... POST to finished plan, p50 / p99 / max ms",
                    lambda r: f"{r['small_plan_p50_ms']} / {r['small_plan_p99_ms']} / {r['small_plan_max_ms']}",
                ),
                row(
                    "... in the queue (submitted -> started), p50 / p99 ms",
                    lambda r: f"{r['small_plan_queue_p50_ms']} / {r['small_plan_queue_p99_ms']}",
                ),
                row(
                    "... solving (started -> finished), p50 / p99 ms",
                    lambda r: f"{r['small_plan_solve_p50_ms']} / {r['small_plan_solve_p99_ms']}",
                ),
                row(
                    "/healthz probe every 100 ms: p50 / p99 / max ms",
                    lambda r: (
                        f"{r['healthz_p50_ms']} / {r['healthz_p99_ms']} / {r['healthz_max_ms']} ({r['healthz_probes']})"
                    ),
                ),
                row(
                    "... while every solver process was busy: p99 / max ms",
                    lambda r: (
                        f"{r['healthz_all_busy_p99_ms']} / {r['healthz_all_busy_max_ms']} "
                        f"({r['healthz_probes_all_workers_busy']} probes, all busy "
                        f"{r['all_workers_busy_share']:.0%} of the time)"
                    ),
                ),
                row(
                    "HTTP process RSS before -> after, MiB",
                    lambda r: " -> ".join(str(v) for v in r["http_process_rss_mb"]),
                ),
            ],
            ("figure", *(f"{r.get('mix', 'full')} mix" for r in runs)),
        ),
        "Every request got its expected answer. The latency of a small synchronous plan is almost all time in the "
        "FIFO solve queue: 32 clients in a closed loop share 2 solver processes, so by Little's law a plan waits "
        "for those ahead of it (2-s demo solves in the full mix); the solve itself is the `solving` row. The "
        "queue never reached its bound (64), so no 503 was needed. /healthz stays fast throughout, including "
        "while every solver process is busy.",
        "",
    ]


def _md_memory(f: dict[str, Any]) -> list[str]:
    rows = []
    for label, run in (
        ("recycled every 50 solves (default)", f["with_recycling"]),
        ("never recycled", f["without_recycling"]),
    ):
        rows.append(
            (
                label,
                run["solves"],
                run["solver_processes"],
                f"{run['rss_peak_per_process_mb']['min']} / {run['rss_peak_per_process_mb']['median']} / "
                f"{run['rss_peak_per_process_mb']['max']}",
                f"{run['http_process_rss_mb']['before']} -> {run['http_process_rss_mb']['after']}",
                ", ".join(f"{k}: {v}" for k, v in run["statuses"].items()),
            )
        )
    timeline = lambda run: ", ".join(f"{n}: {mb}" for n, mb in run["solver_rss_every_50_solves_mb"][::4])  # noqa: E731
    return [
        "Consecutive synchronous solves in one `optsched serve` with one solver process: tiny.json, a 20-job instance "
        "(size S) and every 25th a 200-job instance (size M, 2 s), so that the solver's peak working set varies.",
        "",
        *_table(
            rows,
            ("solver process", "solves", "solver processes", "peak RSS per process min / median / max MiB",
             "HTTP process RSS MiB", "statuses"),
        ),
        f"Solver RSS (MiB) after N solves, recycled: {timeline(f['with_recycling'])}.",
        "",
        f"Never recycled: {timeline(f['without_recycling'])}.",
        "",
    ]


def _md_access(f: dict[str, Any]) -> list[str]:
    return _table(
        [
            (
                "protected routes (every route but the public ones, from url_map)",
                f"{len(f['protected_routes'])}: " + ", ".join(f"`{r}`" for r in f["protected_routes"]),
            ),
            (
                "requests without a valid token (5 kinds: none, wrong, longer, Basic, no scheme)",
                f"{f['requests_without_a_valid_token']}: " + ", ".join(f"{k}: {v}" for k, v in f["answers"].items()),
            ),
            ("responses echoing the token", f["token_echoed"]),
            ("public routes", ", ".join(f"`{r}`" for r in f["public_routes"])),
            (
                "ids",
                f"{f['ids']['created']:,} created, {f['ids']['distinct']:,} distinct, UUID versions "
                f"{f['ids']['uuid_versions']}",
            ),
            (
                "file modes of a new database under umask 000",
                ", ".join(f"{k}: {v}" for k, v in f["sqlite_modes_umask_000"].items()),
            ),
        ],
        ("figure", "value"),
    )


def _md_kinds(f: dict[str, Any]) -> list[str]:
    kills = ", ".join(f"{mode}: {n}" for mode, n in f["kills"].items())
    return [
        f"{f['cycles']} cycles on one SQLite file; each POSTs a plan, a night plan, a frontier, a queueing study (a "
        "simulation), a re-plan (`{}`) of a finished plan and a synchronous /v1/verify, each with its Idempotency-Key "
        "and retried across the kill until answered, waits until one of them solves, then SIGKILLs, in turn, the "
        "whole server process group, its HTTP process alone, its solver processes alone, or the whole group from "
        "inside a database commit.",
        "",
        *_table(
            [
                ("kills by what was killed", kills),
                ("... of which the failpoint fired inside a commit", f["kills_inside_a_commit"]),
                ("resources queued or solving at the kills (summed over the kills)",
                 ", ".join(f"{k}: {v}" for k, v in f["resources_in_flight_at_the_kills"].items())),
                ("requests cut by a kill, then retried with their Idempotency-Key",
                 f["requests_cut_by_kills_then_retried"]),
                ("resources accepted (the parent plan included)", f["accepted"]),
                ("lost (404 or never final)", f["lost"]),
                ("final statuses", ", ".join(f"{k}: {v}" for k, v in f["final_statuses"].items())),
                ("final without a verified result", len(f["not_verified"])),
                ("verifications answered", ", ".join(f"{k}: {v}" for k, v in f["verifications_answered"].items())),
                ("rows in the database (one per accepted resource)", f["rows_in_database"]),
                ("PRAGMA integrity_check", f["integrity_check"]),
            ],
            ("figure", "value"),
        ),
        *([f"Final without a verified result: {'; '.join(f['not_verified'])}.", ""] if f["not_verified"] else []),
    ]


_SECTIONS_MD = (
    ("1a. Bad input never causes a 5xx: schemathesis", "fuzz", _md_fuzz),
    (
        "1b. Bad input never causes a 5xx: mutated workloads through the Python API, the CLI and the REST API",
        "mutate",
        _md_mutate,
    ),
    ("2. Every plan is feasible; no baseline beats an optimal plan", "feasible", _md_feasible),
    ("3. Limits hold", "limits", _md_limits),
    ("4. Nothing is lost under crashes", "crash", _md_crash),
    ("4b. Nothing is lost under crashes of each kind, with every kind in flight (issue 25)", "kinds", _md_kinds),
    ("5. Load", "load", _md_load),
    ("6. Memory is stable", "memory", _md_memory),
    ("7. Access control", "access", _md_access),
)


if __name__ == "__main__":
    main()
