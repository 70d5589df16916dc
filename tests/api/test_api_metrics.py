"""GET /metrics (api/metrics.py), parsed with prometheus_client's own parser: requests by URL rule and status (error
responses too), solves read from the store whoever wrote them (this server's pool, another process), each counted
once, queue depth and workers, store errors, the token."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import text, update

from api import services
from api.metrics import EXTENSION, UNMATCHED
from optsched.infra.store import JobState, PlanStore, plans
from optsched.service.settings import ConfigError, load_settings
from tests.api.helpers import assert_verified, tiny_workload
from tests.support.polling import poll

TOKEN = "metrics-api-token-0123456789"
SCRAPER = "metrics-scraper-token-0123456789"


def scrape(client, **kwargs) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of /metrics as {(name, sorted labels): value}, read by prometheus_client's parser."""
    response = client.get("/metrics", **kwargs)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.mimetype == "text/plain" and "version=" in response.headers["Content-Type"]
    samples = {}
    for family in text_string_to_metric_families(response.get_data(as_text=True)):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples, name: str, **labels: str) -> float:
    """A sample's value; 0 when the series does not exist (a counter nothing has incremented)."""
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def requests_of(samples, route: str, status: str, method: str = "GET") -> float:
    return value(samples, "optsched_http_requests_total", method=method, route=route, status=status)


def test_requests_are_counted_by_url_rule_method_and_status_errors_included(client):
    client.get("/v1/plans")
    client.get("/v1/plans")
    for plan_id in ("a1", "b2", "c3"):  # three ids, one series: the URL rule
        assert client.get(f"/v1/plans/{plan_id}").status_code == 404
    assert client.post("/v1/plans", json={"jobs": "x"}).status_code == 422
    assert client.post("/v1/plans", data="{", content_type="application/json").status_code == 400
    assert client.get("/no/such/path").status_code == 404
    assert client.open("/v1/plans", method="BREW").status_code == 405
    assert client.get("/healthz").status_code == 200
    samples = scrape(client)
    assert requests_of(samples, "/v1/plans", "200") == 2
    assert requests_of(samples, "/v1/plans/<plan_id>", "404") == 3
    assert requests_of(samples, "/v1/plans", "422", "POST") == 1
    assert requests_of(samples, "/v1/plans", "400", "POST") == 1
    assert requests_of(samples, UNMATCHED, "404") == 1
    # A method no rule takes: routing fails, so no rule; the verb is no label value either.
    assert value(samples, "optsched_http_requests_total", method="other", route=UNMATCHED, status="405") == 1
    assert requests_of(samples, "/healthz", "200") == 1
    assert requests_of(samples, "/metrics", "200") == 0  # this scrape is counted once it is answered
    total = sum(v for (name, _), v in samples.items() if name == "optsched_http_requests_total")
    assert total == 10
    # The duration histogram counts the same requests, each in the buckets at and above its duration.
    assert value(samples, "optsched_http_request_duration_seconds_count", method="GET", route="/v1/plans") == 2
    assert value(samples, "optsched_http_request_duration_seconds_bucket", method="GET", route="/v1/plans",
                 le="+Inf") == 2
    assert 0 < value(samples, "optsched_http_request_duration_seconds_sum", method="GET", route="/v1/plans") < 10
    assert not any("a1" in str(labels) for _, labels in samples)
    assert requests_of(scrape(client), "/metrics", "200") == 1


def _end(store: PlanStore, kind: str, *, waited_s: float, solved_s: float, verdict: str | None = "optimal",
         state: JobState = JobState.finished) -> str:
    """A job created, claimed and ended through the store (as any worker does), its times then set to `waited_s`
    in the queue and `solved_s` solving, ending now."""
    record, _ = store.create({"name": "w"}, kind=kind)
    claimed = store.claim(record.id)
    assert claimed is not None
    assert store.finish(record.id, claimed.attempts, state, verdict=verdict, error=None if verdict else "x")
    ended = datetime.now(UTC)
    started = ended - timedelta(seconds=solved_s)
    with store.engine.begin() as c:
        c.execute(update(plans).where(plans.c.id == record.id).values(
            submitted_at=started - timedelta(seconds=waited_s), started_at=started, finished_at=ended))
    return record.id


def test_solves_are_read_from_the_store_by_kind_and_outcome_with_their_durations_and_waits(app, client):
    store = PlanStore(services(app).store.url)  # another connection pool: as a worker elsewhere writes
    _end(store, "plan", waited_s=2.0, solved_s=3.0)
    _end(store, "plan", waited_s=2.0, solved_s=3.0)
    _end(store, "night", waited_s=0.02, solved_s=40.0, verdict="time_limit")
    _end(store, "plan", waited_s=0.2, solved_s=0.3, verdict=None, state=JobState.failed)
    queued, _ = store.create({"name": "w"}, kind="frontier")
    store.cancel(queued.id)  # cancelled before a worker claimed it: an outcome, no duration, no wait
    samples = scrape(client)
    solves = {labels: v for (name, labels), v in samples.items() if name == "optsched_solves_total"}
    assert solves == {
        (("kind", "plan"), ("outcome", "optimal")): 2,
        (("kind", "night"), ("outcome", "time_limit")): 1,
        (("kind", "plan"), ("outcome", "failed")): 1,
        (("kind", "frontier"), ("outcome", "cancelled")): 1,
    }
    solve, wait = "optsched_solve_duration_seconds", "optsched_queue_wait_seconds"
    assert value(samples, f"{solve}_count", kind="plan") == 3
    assert value(samples, f"{solve}_sum", kind="plan") == pytest.approx(6.3, abs=0.01)
    assert value(samples, f"{solve}_bucket", kind="plan", le="0.25") == 0
    assert value(samples, f"{solve}_bucket", kind="plan", le="0.5") == 1
    assert value(samples, f"{solve}_bucket", kind="plan", le="2.5") == 1
    assert value(samples, f"{solve}_bucket", kind="plan", le="5.0") == 3
    assert value(samples, f"{solve}_bucket", kind="night", le="30.0") == 0
    assert value(samples, f"{solve}_bucket", kind="night", le="60.0") == 1
    assert value(samples, f"{wait}_count", kind="plan") == 3
    assert value(samples, f"{wait}_bucket", kind="plan", le="1.0") == 1
    assert value(samples, f"{wait}_bucket", kind="plan", le="2.5") == 3
    assert value(samples, f"{wait}_bucket", kind="night", le="0.05") == 1
    assert value(samples, f"{solve}_count", kind="frontier") == 0
    assert value(samples, f"{wait}_count", kind="frontier") == 0
    # Scraped again, nothing is counted twice; a job ended since is counted once.
    _end(store, "plan", waited_s=1.0, solved_s=1.0)
    again = scrape(client)
    assert value(again, "optsched_solves_total", kind="plan", outcome="optimal") == 3
    assert value(again, "optsched_solves_total", kind="night", outcome="time_limit") == 1
    assert value(again, f"{solve}_count", kind="plan") == 4
    assert value(again, "optsched_store_up") == 1
    store.close()


def test_a_job_ended_before_the_server_started_is_not_counted_and_a_late_write_is_counted_once(app, client):
    store = services(app).store
    origin = app.extensions[EXTENSION].store_collector.origin
    old = _end(store, "plan", waited_s=1, solved_s=1)
    recent = _end(store, "plan", waited_s=1, solved_s=1)
    with store.engine.begin() as c:  # ended a second before this process started
        c.execute(update(plans).where(plans.c.id == old).values(finished_at=origin - timedelta(seconds=1)))
    assert value(scrape(client), "optsched_solves_total", kind="plan", outcome="optimal") == 1
    late = _end(store, "plan", waited_s=1, solved_s=1)
    with store.engine.begin() as c:  # its end written after the last scrape read past it (a slow commit)
        c.execute(update(plans).where(plans.c.id == late).values(finished_at=origin + timedelta(microseconds=1)))
    assert recent != late
    for _ in range(2):
        assert value(scrape(client), "optsched_solves_total", kind="plan", outcome="optimal") == 2


def test_a_scrape_reads_at_most_a_page_of_jobs_and_the_next_scrape_goes_on(app, client):
    collector = app.extensions[EXTENSION].store_collector
    collector.page_rows = 2
    store = services(app).store
    for _ in range(5):
        _end(store, "plan", waited_s=1, solved_s=1)
    counts = [value(scrape(client), "optsched_solves_total", kind="plan", outcome="optimal") for _ in range(4)]
    assert counts == [2, 4, 5, 5]


@pytest.mark.slow  # three solves in the pool
def test_plans_solved_by_the_pool_are_counted_with_its_workers_and_queue(live):
    before = scrape(live)
    data = [tiny_workload(f"metrics-{i}") for i in range(3)]
    for workload in data:
        response = live.post("/v1/plans", json=workload, headers={"Prefer": "respond-async"})
        assert response.status_code == 202
        assert_verified(workload, poll(live, response.headers["Location"]))
    after = scrape(live)
    optimal = ("optsched_solves_total", (("kind", "plan"), ("outcome", "optimal")))
    assert after.get(optimal, 0) - before.get(optimal, 0) == 3
    solved = ("optsched_solve_duration_seconds_count", (("kind", "plan"),))
    assert after.get(solved, 0) - before.get(solved, 0) == 3
    assert value(after, "optsched_workers") == 1 and value(after, "optsched_queue_depth") == 0
    assert value(after, "optsched_queue_up") == 1 and value(after, "optsched_queue_oldest_wait_seconds") == 0
    assert requests_of(after, "/v1/plans", "202", "POST") - requests_of(before, "/v1/plans", "202", "POST") == 3


@pytest.mark.slow  # a second Python process
def test_a_job_ended_by_another_process_reaches_metrics(app, client, tmp_path):
    url = services(app).store.url
    script = (
        "import sys; from optsched.infra.store import JobState, PlanStore\n"
        "store = PlanStore(sys.argv[1]); record, _ = store.create({'name': 'w'}, kind='plan')\n"
        "store.claim(record.id); assert store.finish(record.id, 1, JobState.finished, verdict='heuristic')\n"
    )
    subprocess.run([sys.executable, "-c", script, url], check=True, timeout=60)
    assert value(scrape(client), "optsched_solves_total", kind="plan", outcome="heuristic") == 1


def test_queue_depth_and_the_oldest_wait_are_read_at_scrape_time(make_app):
    app = make_app(START_WORKERS=False)
    client = app.test_client()
    assert client.post("/v1/plans", json=tiny_workload(), headers={"Prefer": "respond-async"}).status_code == 202
    store = services(app).store
    oldest = store.oldest_queued()
    assert oldest is not None
    with store.engine.begin() as c:
        c.execute(update(plans).values(submitted_at=datetime.now(UTC) - timedelta(seconds=120)))
    samples = scrape(client)
    assert value(samples, "optsched_queue_depth") == 1  # the pool holds it, no worker takes it
    assert value(samples, "optsched_workers") == 0
    assert 120 <= value(samples, "optsched_queue_oldest_wait_seconds") < 180


def test_store_errors_are_counted_and_a_scrape_answers_while_the_store_does_not(app, client, monkeypatch):
    store = services(app).store
    with pytest.raises(Exception), store.engine.connect() as c:  # noqa: B017 - SQLite's OperationalError
        c.execute(text("SELECT * FROM no_such_table"))
    assert store.outages() == {"OperationalError": 1}
    samples = scrape(client)
    assert value(samples, "optsched_store_errors_total", error="OperationalError") == 1
    assert value(samples, "optsched_store_up") == 1

    def down(*args, **kwargs):
        with store.engine.connect() as c:
            c.execute(text("SELECT * FROM no_such_table"))

    monkeypatch.setattr(store, "finished_since", down)
    samples = scrape(client)
    assert value(samples, "optsched_store_up") == 0
    assert value(samples, "optsched_store_errors_total", error="OperationalError") == 2
    assert ("optsched_queue_oldest_wait_seconds", ()) not in samples


@pytest.mark.parametrize(
    ("config", "needs"),
    [
        ({"API_TOKEN": None}, None),
        ({"API_TOKEN": TOKEN}, TOKEN),
        ({"API_TOKEN": TOKEN, "METRICS_TOKEN": SCRAPER}, SCRAPER),
        ({"API_TOKEN": None, "METRICS_TOKEN": SCRAPER}, SCRAPER),
    ],
)
def test_metrics_needs_the_scrapers_token_else_the_api_token(make_app, config, needs):
    client = make_app(**config).test_client()
    for token in (TOKEN, SCRAPER, None):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        response = client.get("/metrics", headers=headers)
        allowed = needs is None or token == needs
        assert response.status_code == (200 if allowed else 401), (config, token)
        if not allowed:
            assert response.mimetype == "application/problem+json"
            assert response.headers["WWW-Authenticate"].startswith("Bearer")


def test_a_short_metrics_token_is_refused_at_start():
    with pytest.raises(ConfigError, match="OPTSCHED_METRICS_TOKEN"):
        load_settings(environ={"OPTSCHED_METRICS_TOKEN": "short"})


def test_more_requests_and_jobs_add_to_the_series_never_a_new_one(client, app):
    """The label values are URL rules, methods, statuses, kinds and outcomes: ids never make a series."""
    store = services(app).store
    _end(store, "plan", waited_s=0.5, solved_s=0.5)
    client.get("/v1/plans/first-id")
    series = set(scrape(client))
    for i in range(5):
        _end(store, "plan", waited_s=0.5, solved_s=0.5)
        client.get(f"/v1/plans/id-{i}")
    samples = scrape(client)
    assert set(samples) == series | {("optsched_http_requests_total", (("method", "GET"), ("route", "/metrics"),
                                                                        ("status", "200"))),
                                     *(key for key in samples if key[0].startswith("optsched_http_request_duration")
                                       and ("route", "/metrics") in key[1])}
    assert value(samples, "optsched_solves_total", kind="plan", outcome="optimal") == 6
