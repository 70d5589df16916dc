"""`GET /metrics`: the service's metrics in the Prometheus text format (prometheus-client), documented in
docs/operations/metrics.md.

Two sources, one registry per app:

- requests, counted where they are answered: an app-wide before_request/after_request pair labels each response
  with its URL rule (`/v1/plans/<plan_id>`, never the raw path, so ids cannot multiply the series), its method
  and its status; error responses pass through after_request like any other (Flask runs it on what the error
  handlers return);
- solves, read from the store at scrape time (`StoreCollector`): the store is where every queue writes a job's
  end, whichever process solved it (a solver process of this server's pool, or an RQ work horse on another
  machine), so the same query counts both deployments' solves, needs no shared folder (prometheus-client's
  multiprocess mode would, and only reaches processes of one machine) and no second record of an outcome. Each
  scrape reads the jobs that ended since the last one (at most `PAGE_ROWS`, the rest at the next scrape) and adds
  them to counters and histograms that start at zero when this process starts; queue depth and workers come from
  the queue, store errors from the store's own count.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from flask import Flask, Response, current_app, g, request
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    ProcessCollector,
    disable_created_metrics,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest

from api.guards import bearer_matches, bearer_team, refuse_while_throttled, unauthorized
from api.services import tenants
from optsched.infra.queue import SolveQueue
from optsched.infra.rq.keys import QUEUE_OUTAGES
from optsched.infra.store import DATABASE_OUTAGES, EndedJob, PlanStore

log = logging.getLogger(__name__)

EXTENSION = "optsched.metrics"
# Methods counted by name; any other verb a client sends is `other` (a label value per verb would be unbounded).
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED = "<unmatched>"  # the route label of a request no URL rule matched (404s, 401s of unknown /v1 URLs)
SERVER = "<server>"  # the route label of the HTTP server's own answers (400, 408, 413, 431: api/serve.py)
# Solve and queue-wait buckets, in seconds: from the small workloads' 40 ms solves to the hour MAX_SOLVE_S allows.
SOLVE_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
WAIT_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
# Jobs one scrape reads from the store at most (the cost of a scrape is bounded); more wait for the next scrape.
PAGE_ROWS = 10_000
# A job whose end is written up to this late is still counted, once: a transaction that committed after a later
# one, or a worker machine whose clock is behind (the end time is the writer's clock).
LATE_S = 10.0


class StoreCollector:
    """Solve outcomes, durations and queue waits of the jobs that ended since this process started (read from the
    store at each scrape), the queue's depth and workers, the store's errors."""

    def __init__(self, store: PlanStore, queue: SolveQueue, *, page_rows: int = PAGE_ROWS):
        self.store, self.queue, self.page_rows = store, queue, page_rows
        self.origin = datetime.now(UTC)
        self._cursor = self.origin  # the latest end time read so far
        self._resume: tuple[datetime, str] | None = None  # after a read cut at page_rows: its last job (end, id)
        self._seen: dict[str, datetime] = {}  # jobs counted whose end is within LATE_S of the cursor
        self._lock = threading.Lock()
        self._children: dict[tuple[str, str], tuple[Any, Any, Any]] = {}
        self.solves = Counter(
            "optsched_solves", "Jobs that ended since this process started, by kind and outcome (the verdict of a "
            "finished job, else failed or cancelled).", ["kind", "outcome"], registry=None,
        )
        self.solve_seconds = Histogram(
            "optsched_solve_duration_seconds", "Wall time of a job's last solve attempt, from its claim by a worker "
            "to its end, by kind.", ["kind"], buckets=SOLVE_BUCKETS, registry=None,
        )
        self.wait_seconds = Histogram(
            "optsched_queue_wait_seconds", "Time a job waited from its submission to the claim of its last solve "
            "attempt, by kind.", ["kind"], buckets=WAIT_BUCKETS, registry=None,
        )

    def describe(self) -> list[Metric]:
        return []  # the registry then does not call collect() (and the store) when it is registered

    def collect(self) -> Iterator[Metric]:
        with self._lock:  # concurrent scrapes read the store one after the other and count each job once
            store_up = self._read_ended_jobs()
            counted = [*self.solves.collect(), *self.solve_seconds.collect(), *self.wait_seconds.collect()]
        yield from counted
        yield from self._queue_gauges()
        oldest = None
        if store_up:
            try:
                oldest = self.store.oldest_queued()
            except DATABASE_OUTAGES:
                store_up = False
        if store_up:
            waited = 0.0 if oldest is None else max(0.0, (datetime.now(UTC) - oldest).total_seconds())
            yield GaugeMetricFamily(
                "optsched_queue_oldest_wait_seconds",
                "How long the job that has waited longest for a worker has waited (0: none waits).",
                value=waited,
            )
        yield GaugeMetricFamily(
            "optsched_store_up", "1 if the store answered this scrape's queries, else 0.", value=int(store_up)
        )
        errors = CounterMetricFamily(
            "optsched_store_errors",
            "Database errors this process met (the database did not answer, refused a connection or cut a "
            "session), by SQLAlchemy error class.",
            labels=["error"],
        )
        for name, count in sorted(self.store.outages().items()):
            errors.add_metric([name], count)
        yield errors

    def _read_ended_jobs(self) -> bool:
        """Count the jobs that ended since the last read; False when the store did not answer."""
        # After a read cut at page_rows, the next one goes on after the last job read; else it looks LATE_S back.
        since, after_id = self._resume or (max(self.origin, self._cursor - timedelta(seconds=LATE_S)), None)
        try:
            records = self.store.finished_since(since, self.page_rows, after_id=after_id)
        except DATABASE_OUTAGES as exc:
            log.warning("metrics: the store does not answer (%s); solve counts wait for the next scrape",
                        type(exc).__name__)
            return False
        for record in records:
            if record.id not in self._seen:
                self._seen[record.id] = record.finished_at
                self._count(record)
        if records:
            last = records[-1]
            self._cursor = max(self._cursor, last.finished_at)
            self._resume = (last.finished_at, last.id) if len(records) >= self.page_rows else None
        else:
            self._resume = None
        horizon = self._cursor - timedelta(seconds=LATE_S)
        self._seen = {job: ended for job, ended in self._seen.items() if ended >= horizon}
        return True

    def _count(self, record: EndedJob) -> None:
        key = (record.kind, record.outcome)
        if key not in self._children:  # labels() validates and locks on each call: once per series is enough
            self._children[key] = (self.solves.labels(*key), self.wait_seconds.labels(record.kind),
                                   self.solve_seconds.labels(record.kind))
        solves, waits, durations = self._children[key]
        solves.inc()
        if record.started_at is None:  # cancelled or failed before a worker claimed it
            return
        waits.observe(_seconds(record.submitted_at, record.started_at))
        durations.observe(_seconds(record.started_at, record.finished_at))

    def _queue_gauges(self) -> Iterator[Metric]:
        try:
            depth, workers = self.queue.depth(), self.queue.worker_count()
        except QUEUE_OUTAGES as exc:
            log.warning("metrics: the solve queue does not answer (%s)", type(exc).__name__)
            yield GaugeMetricFamily("optsched_queue_up", "1 if the solve queue answered this scrape, else 0.", value=0)
            return
        yield GaugeMetricFamily("optsched_queue_up", "1 if the solve queue answered this scrape, else 0.", value=1)
        yield GaugeMetricFamily("optsched_queue_depth", "Jobs waiting in the solve queue for a worker.", value=depth)
        yield GaugeMetricFamily(
            "optsched_workers", "Solver workers alive that take jobs from this queue (the embedded pool's processes, "
            "or the RQ workers registered on the queue).", value=workers,
        )


def _seconds(start: datetime, end: datetime) -> float:
    return max(0.0, (end - start).total_seconds())


class Metrics:
    """An app's registry: its requests, its store and queue (StoreCollector), its own process (CPU, memory, fds)."""

    def __init__(self, store: PlanStore, queue: SolveQueue):
        self.registry = CollectorRegistry(auto_describe=False)
        self.requests = Counter(
            "optsched_http_requests", "HTTP requests answered, by method, route (the URL rule) and status.",
            ["method", "route", "status"], registry=self.registry,
        )
        self.request_seconds = Histogram(
            "optsched_http_request_duration_seconds",
            "Time from a request's arrival in the app to its response, by method and route.",
            ["method", "route"], registry=self.registry,
        )
        self.store_collector = StoreCollector(store, queue)
        self.registry.register(self.store_collector)
        ProcessCollector(registry=self.registry)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


def install(app: Flask, store: PlanStore, queue: SolveQueue) -> Metrics:
    """Count `app`'s requests and serve /metrics; call before the app's other before_request hooks, so that a
    request they answer (401, 415) is timed too."""
    disable_created_metrics()  # no `_created` series beside each counter and histogram: half the text, no loss
    metrics = Metrics(store, queue)
    app.extensions[EXTENSION] = metrics
    app.before_request(_started)
    app.after_request(_count_request)
    app.add_url_rule("/metrics", "metrics", _metrics_view, methods=["GET"])
    return metrics


def _started() -> None:
    g.metrics_started = time.perf_counter()


def _count_request(response: Response) -> Response:
    metrics: Metrics = current_app.extensions[EXTENSION]
    method = request.method if request.method in METHODS else "other"
    route = request.url_rule.rule if request.url_rule is not None else UNMATCHED
    metrics.requests.labels(method, route, str(response.status_code)).inc()
    started = g.get("metrics_started")
    if started is not None:
        metrics.request_seconds.labels(method, route).observe(time.perf_counter() - started)
    return response


def count_server_answer(app: Flask, method: str, status: int) -> None:
    """Count an answer the HTTP server gave itself, before the request reached the app (api/serve.py)."""
    metrics: Metrics = app.extensions[EXTENSION]
    metrics.requests.labels(method if method in METHODS else "other", SERVER, str(status)).inc()


def metrics_allowed() -> bool:
    """Whether the request may read /metrics: with OPTSCHED_METRICS_TOKEN, that token only; else any team's token
    (the metrics are the service's counts, without ids), or anyone when the service runs with OPTSCHED_AUTH=off."""
    scraper = current_app.config.get("METRICS_TOKEN")
    if scraper:
        return bearer_matches(scraper)
    return not tenants().enabled or bearer_team() is not None


def _metrics_view() -> Response:
    if current_app.config.get("METRICS_TOKEN") or tenants().enabled:
        refuse_while_throttled()  # wrong tokens here are guesses too (api/throttle.py)
    if not metrics_allowed():
        raise unauthorized(
            "/metrics needs `Authorization: Bearer <token>` with OPTSCHED_METRICS_TOKEN (or, when that is not set, "
            "a team's token)"
        )
    metrics: Metrics = current_app.extensions[EXTENSION]
    response = current_app.response_class(metrics.exposition(), status=200)
    response.headers["Content-Type"] = CONTENT_TYPE_LATEST
    response.headers["Cache-Control"] = "no-store"
    return response
