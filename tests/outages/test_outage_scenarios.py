"""The outages with plans in flight (tests/support/outages.py): clients keep submitting and reading while Redis is
killed and restarted (without, then with persistence), the database refuses connections with its sessions cut,
and a worker pool is killed. Every accepted plan ends final with exactly one row and a verified plan, no claim
is solved twice, clients see only 2xx, 4xx and 503; `python -m bench.outages` measures the same at a larger budget.
"""

from __future__ import annotations

import pytest

from tests.support.outages import database_outage, redis_outage, worker_killed

pytestmark = pytest.mark.slow


def _held(report) -> None:
    assert report.problems == [], report
    assert report.tracebacks == 0, report
    assert report.worker_respawns == 0, report  # no crash loop: workers wait for their dependencies


def test_redis_killed_and_restarted_empty(deployment):
    report = redis_outage(deployment, persistent=False)

    _held(report)
    assert report.in_flight_at_cut["solving"] >= 1
    assert report.re_solves == 0 and set(report.attempts) == {1}
    assert report.statuses_during["POST 503"] >= 1 and "POST 500" not in report.statuses_during
    assert "Redis" in report.readyz_during
    # Redis forgot every worker; they registered again (so batch and Retry-After see them), and an idle pool
    # stopped within seconds of SIGTERM.
    assert report.workers_registered_after_s is not None
    assert report.stop_after_sigterm_s < 20


def test_redis_killed_and_restarted_from_its_append_only_file(deployment):
    report = redis_outage(deployment, persistent=True)

    _held(report)
    assert report.re_solves == 0 and set(report.attempts) == {1}
    assert report.statuses_during["POST 503"] >= 1
    assert report.stop_after_sigterm_s < 20


def test_database_refusing_connections_costs_no_solve(deployment):
    report = database_outage(deployment)

    _held(report)
    assert report.in_flight_at_cut["solving"] >= 1
    assert report.re_solves == 0 and set(report.attempts) == {1}
    assert report.statuses_during["POST 503"] >= 1 and report.statuses_during["GET 503"] >= 1
    assert not any(k.endswith(" 500") for k in report.statuses_during)
    assert "database" in report.readyz_during
    assert report.spool_replayed == report.spooled  # every answer spooled during the outage was recorded after


def test_a_worker_pool_killed_while_solving_costs_one_claim(deployment):
    report = worker_killed(deployment)

    _held(report)
    assert max(report.attempts) == 2 and report.re_solves >= 1  # the killed pool's plan, solved again once
