"""Issue 25, items 6b and 7: the service refuses to start without a real token unless OPTSCHED_AUTH=off says so
(and then warns), wrong tokens are throttled per client address, and teams (OPTSCHED_API_TOKENS) see, replay,
chart, page and delete only their own resources, each within its share of the solve queue."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from api import create_app, services
from api.throttle import Throttle
from optsched.infra.store import PlanStore
from optsched.schema.errors import OptschedError
from optsched.service.settings import ConfigError
from optsched.service.tenants import DEFAULT_TEAM, Admission, tenants_of
from optsched.verify.placement import verify
from tests.api.helpers import solve_now, tiny_workload

A_TOKEN, B_TOKEN = "team-a-token-0f3c9b7e21", "team-b-token-6d0a4c8f55"
A = {"Authorization": f"Bearer {A_TOKEN}"}
B = {"Authorization": f"Bearer {B_TOKEN}"}
TEAMS = f"team-a:{A_TOKEN},team-b:{B_TOKEN}"


def problem(response, status: int) -> dict:
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/problem+json"
    return response.get_json()


# -- 6b: no start without a real token --------------------------------------------------------------------------


@pytest.mark.parametrize("config, names", [
    ({}, "OPTSCHED_AUTH=off"),  # no token at all
    ({"API_TOKEN": "short-1"}, "OPTSCHED_API_TOKEN"),
    ({"API_TOKEN": " " * 20}, "OPTSCHED_API_TOKEN"),
    ({"API_TOKENS": "team-a:0123456789abcdefXYZ,team-b:tiny"}, "OPTSCHED_API_TOKENS (team-b)"),
    ({"API_TOKENS": "Team A:0123456789abcdefXYZ"}, "OPTSCHED_API_TOKENS"),
    ({"API_TOKENS": "a:0123456789abcdefXYZ,b:0123456789abcdefXYZ"}, "share a token"),
    ({"API_TOKENS": "a:0123456789abcdefXYZ,a:0123456789abcdefXYW"}, "named twice"),
    ({"API_TOKEN": "0123456789abcdefXYZ", "AUTH": "off"}, "OPTSCHED_AUTH=off"),
])
def test_the_service_refuses_to_start_without_a_real_token_and_names_the_setting(tmp_path, config, names):
    with pytest.raises(ConfigError) as refused:
        create_app({"DATABASE_URL": f"sqlite:///{tmp_path}/x.db", "START_WORKERS": False, **config})
    message = str(refused.value)
    assert names in message
    for token in ("short-1", "0123456789abcdefXYZ", "tiny"):
        assert token not in message  # a refused token is never echoed (it would end up in logs)
    assert not (tmp_path / "x.db").exists()  # refused before anything was opened


@pytest.mark.parametrize("token, says", [(None, "OPTSCHED_AUTH=off"), ("", "OPTSCHED_AUTH=off"),
                                          ("x", "16 printable")])
def test_optsched_serve_refuses_to_start_with_exit_code_2_before_it_listens(monkeypatch, tmp_path, token, says):
    from typer.testing import CliRunner

    from optsched.cli import app as cli

    for name in ("OPTSCHED_API_TOKEN", "OPTSCHED_API_TOKENS", "OPTSCHED_AUTH"):
        monkeypatch.delenv(name, raising=False)
    env = {"OPTSCHED_DATABASE_URL": f"sqlite:///{tmp_path}/s.db"}
    if token is not None:
        env["OPTSCHED_API_TOKEN"] = token
    result = CliRunner().invoke(cli, ["serve", "--port", "1"], env=env)
    assert result.exit_code == 2 and says in " ".join(result.output.split()), result.output
    assert not (tmp_path / "s.db").exists()


def test_the_environment_is_checked_too_so_an_empty_token_does_not_turn_authentication_off():
    from optsched.service.settings import load_settings

    with pytest.raises(ConfigError, match="OPTSCHED_AUTH=off"):
        tenants_of(load_settings(environ={"OPTSCHED_API_TOKEN": ""}))  # empty counts as unset: refused
    assert not tenants_of(load_settings(environ={"OPTSCHED_AUTH": "off"})).enabled


def test_auth_off_is_explicit_and_logged_at_start(make_app, caplog):
    with caplog.at_level(logging.WARNING, logger="optsched.service.tenants"):
        client = make_app(AUTH="off").test_client()
    assert any("authentication is off" in r.getMessage() for r in caplog.records)
    assert client.post("/v1/plans", json=tiny_workload()).status_code == 202


def test_tokens_never_reach_the_logs(make_app, caplog):
    with caplog.at_level(logging.DEBUG):
        client = make_app(API_TOKENS=TEAMS, AUTH_FAILURE_BURST=100).test_client()
        client.post("/v1/plans", json=tiny_workload(), headers=A)
        client.get("/v1/plans", headers={"Authorization": f"Bearer {A_TOKEN}x"})
        client.post("/login", data={"token": B_TOKEN + "y"})
    assert "team-a, team-b" in caplog.text  # the teams are logged at start ...
    assert A_TOKEN not in caplog.text and B_TOKEN not in caplog.text  # ... their tokens never


# -- 6b: the guess throttle -------------------------------------------------------------------------------------


def test_the_throttle_refills_at_its_rate_and_forgets_the_oldest_addresses():
    now = [0.0]
    throttle = Throttle(rate_per_s=2.0, burst=3, max_clients=2, clock=lambda: now[0])
    for _ in range(3):
        assert throttle.wait_s("x") == 0
        throttle.failed("x")
    assert throttle.wait_s("x") == pytest.approx(0.5)  # one token back after 1 / rate seconds
    now[0] += 0.5
    assert throttle.wait_s("x") == 0
    throttle.failed("y")
    throttle.failed("z")  # three addresses, two buckets kept: x (least recently failed) goes
    assert set(throttle._buckets) == {"y", "z"}


def test_wrong_tokens_are_throttled_per_address_and_then_even_the_right_one_waits(make_app):
    client = make_app(API_TOKENS=TEAMS, AUTH_FAILURE_BURST=3, AUTH_FAILURES_PER_S=0.01).test_client()
    for _ in range(3):
        problem(client.get("/v1/plans", headers={"Authorization": "Bearer guess-0123456789abcdef"}), 401)
    throttled = problem(client.get("/v1/plans", headers={"Authorization": "Bearer guess-2"}), 429)
    assert "wrong tokens" in throttled["detail"]
    waiting = client.get("/v1/plans", headers=A)  # the guesser does not get to try the real token either
    assert waiting.status_code == 429 and int(waiting.headers["Retry-After"]) >= 1
    login = client.post("/login", data={"token": A_TOKEN})  # nor through the viewer's login form
    assert login.status_code == 429 and "Set-Cookie" not in login.headers
    elsewhere = {"REMOTE_ADDR": "10.0.0.7"}
    assert client.get("/v1/plans", headers=A, environ_base=elsewhere).status_code == 200  # other addresses: unaffected
    for _ in range(20):  # right tokens and requests without any credential cost nothing
        assert client.get("/v1/plans", headers=B, environ_base=elsewhere).status_code == 200
        problem(client.get("/v1/plans", environ_base=elsewhere), 401)
    assert client.get("/healthz").status_code == 200  # public routes stay open to the throttled address


def test_wrong_login_forms_and_forged_cookies_count_as_guesses(make_app):
    client = make_app(API_TOKENS=TEAMS, AUTH_FAILURE_BURST=2, AUTH_FAILURES_PER_S=0.01).test_client()
    assert client.post("/login", data={"token": "guess-0123456789abcdef"}).status_code == 401
    client.set_cookie("optsched_viewer", f"{10**10}.team-a.{'0' * 64}")
    assert client.get("/").status_code == 401
    page = client.get("/")
    assert page.status_code == 429 and page.headers["Retry-After"]


# -- 7: teams ---------------------------------------------------------------------------------------------------


@pytest.fixture
def teams(make_app):
    app = make_app(API_TOKENS=TEAMS, API_TOKEN="default-token-9a8b7c6d5e")
    return app, app.test_client()


def test_another_teams_resource_is_a_404_indistinguishable_from_a_missing_one(teams):
    app, client = teams
    created = client.post("/v1/plans", json=tiny_workload("a-only"), headers=A)
    assert created.status_code == 202
    plan_id = created.get_json()["id"]
    plan = solve_now(app, plan_id)
    assert verify(tiny_workload("a-only"), plan) == []
    assert client.get(f"/v1/plans/{plan_id}", headers=A).status_code == 200
    missing_id = "0" * 32
    for url in ("/v1/plans/{}", "/plans/{}", "/plans/{}/placement.png"):
        theirs, nothing = client.get(url.format(plan_id), headers=B), client.get(url.format(missing_id), headers=B)
        assert theirs.status_code == nothing.status_code == 404, url
        assert theirs.get_data(as_text=True).replace(plan_id, "ID") == nothing.get_data(as_text=True).replace(
            missing_id, "ID"), url
    problem(client.delete(f"/v1/plans/{plan_id}", headers=B), 404)
    problem(client.post(f"/v1/plans/{plan_id}/replans", json={"budget_w": 400}, headers=B), 404)
    assert client.get("/v1/plans", headers=B).get_json()["items"] == []
    assert "a-only" not in client.get("/", headers=B).get_data(as_text=True)
    assert "a-only" in client.get("/", headers=A).get_data(as_text=True)
    replan = client.post(f"/v1/plans/{plan_id}/replans", json={"budget_w": 400}, headers=A)
    assert replan.status_code == 202  # the owner re-plans it; the re-plan is the owner's too
    problem(client.get(replan.headers["Location"], headers=B), 404)
    assert client.delete(f"/v1/plans/{plan_id}", headers=A).status_code == 204  # the owner deletes it


def test_every_kind_is_scoped_to_its_team(teams):
    import json
    from pathlib import Path

    from tests.api.helpers import night_queue

    season = Path(__file__).resolve().parents[2] / "models" / "studies" / "season.json"
    app, client = teams
    bodies = {
        "/v1/night-plans": {"queue": night_queue(), "start": "2026-12-01T22:00", "hours": 8},
        "/v1/frontiers": {"workload": tiny_workload(), "budgets": [300, 500]},
        "/v1/queueing-studies": {"study": json.loads(season.read_text())},
    }
    for collection, body in bodies.items():
        created = client.post(collection, json=body, headers=A)
        assert created.status_code == 202, created.get_data(as_text=True)
        location = created.headers["Location"]
        problem(client.get(location, headers=B), 404)
        problem(client.delete(location, headers=B), 404)
        page = location.removeprefix("/v1")  # the viewer's page of it
        assert client.get(page, headers=B).status_code == 404 and client.get(page, headers=A).status_code == 200
        cancelled = client.delete(location, headers=A)  # cancelling is the owner's alone
        assert cancelled.status_code == 200 and cancelled.get_json()["status"] == "cancelled"


def test_idempotency_keys_are_each_teams_own(teams):
    _, client = teams
    key = {"Idempotency-Key": "nightly-1"}
    first_a = client.post("/v1/plans", json=tiny_workload("a"), headers=A | key)
    first_b = client.post("/v1/plans", json=tiny_workload("b"), headers=B | key)  # no conflict with a's key
    assert first_a.status_code == first_b.status_code == 202
    assert first_a.get_json()["id"] != first_b.get_json()["id"]
    again_b = client.post("/v1/plans", json=tiny_workload("b"), headers=B | key)
    assert again_b.headers["Idempotent-Replayed"] == "true" and again_b.get_json()["id"] == first_b.get_json()["id"]
    reused = problem(client.post("/v1/plans", json=tiny_workload("a"), headers=B | key), 422)  # b's key, a's body
    assert "Idempotency-Key" in reused["detail"]


def test_a_team_over_its_queue_share_gets_429_while_the_others_still_get_in(make_app):
    client = make_app(API_TOKENS=TEAMS, QUEUE_SIZE=4).test_client()  # two teams: a share of 2 each
    for _ in range(2):
        assert client.post("/v1/plans", json=tiny_workload(), headers=A).status_code == 202
    over = client.post("/v1/plans", json=tiny_workload(), headers=A)
    body = problem(over, 429)
    assert body["type"] == "urn:optsched:problem:team-queue-full" and int(over.headers["Retry-After"]) >= 1
    assert "team-a" in body["detail"] and "share" in body["detail"]
    for _ in range(2):  # b's share is untouched by a's flood
        assert client.post("/v1/plans", json=tiny_workload(), headers=B).status_code == 202
    problem(client.post("/v1/plans", json=tiny_workload(), headers=B), 429)
    first = client.get("/v1/plans", headers=A).get_json()["items"][0]["id"]
    assert client.delete(f"/v1/plans/{first}", headers=A).status_code == 200  # a cancel frees a place
    assert client.post("/v1/plans", json=tiny_workload(), headers=A).status_code == 202


def test_a_team_logs_in_to_the_viewer_and_sees_its_own_resources(teams):
    _, client = teams
    client.post("/v1/plans", json=tiny_workload("for-a"), headers=A)
    client.post("/v1/plans", json=tiny_workload("for-b"), headers=B)
    assert client.post("/login", data={"token": B_TOKEN}).status_code == 303
    cookie = client.get_cookie("optsched_viewer").value
    assert B_TOKEN not in cookie and ".team-b." in cookie
    index = client.get("/").get_data(as_text=True)
    assert "for-b" in index and "for-a" not in index
    forged = cookie.replace(".team-b.", ".team-a.")  # another team's name under b's signature
    client.set_cookie("optsched_viewer", forged)
    assert client.get("/").status_code == 401


def test_the_single_token_is_the_default_team_and_auth_off_is_one_team(make_app):
    assert tenants_of({"API_TOKEN": "x" * 16}).teams == (DEFAULT_TEAM,)
    assert tenants_of({"AUTH": "off"}).queue_share(64) is None  # a lone team has the whole queue
    assert tenants_of({"API_TOKENS": TEAMS}).queue_share(64) == 32
    client = make_app(AUTH="off").test_client()
    created = client.post("/v1/plans", json=tiny_workload()).get_json()
    assert services(client.application).store.get(created["id"]).team == DEFAULT_TEAM


def test_metrics_with_teams_needs_a_teams_token_and_wrong_ones_are_guesses(make_app):
    client = make_app(API_TOKENS=TEAMS, AUTH_FAILURE_BURST=2, AUTH_FAILURES_PER_S=0.01).test_client()
    assert client.get("/metrics", headers=A).status_code == 200 and client.get("/metrics", headers=B).status_code == 200
    problem(client.get("/metrics"), 401)  # no default token configured: still closed
    for _ in range(2):
        problem(client.get("/metrics", headers={"Authorization": "Bearer guess-0123456789abcdef"}), 401)
    problem(client.get("/metrics", headers=A), 429)


# -- 7: the share and the quota are checked in the insert's transaction ------------------------------------------

# One resource fits: a share of one, or a quota the first tiny workload fills.
ONE_FITS = {"share": Admission(share=1, quota_bytes=None, ttl_s=None),
            "quota": Admission(share=None, quota_bytes=1, ttl_s=None)}


def creates_racing(store: PlanStore, admission: Admission, team: str = "team-a") -> list[str]:
    """Two creates of `team` started together, each admitted by `admission` 0.2 s after it read what the team
    holds (the window in which two checks made before their inserts both passed): their outcomes, sorted."""

    def dawdling(usage) -> None:
        time.sleep(0.2)
        admission.judge(team, usage)

    start, outcomes = threading.Barrier(2), []

    def create() -> None:
        start.wait()
        try:
            store.create(tiny_workload(), team=team, admit=dawdling)
            outcomes.append("created")
        except OptschedError as exc:
            outcomes.append(type(exc).__name__)

    threads = [threading.Thread(target=create) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return sorted(outcomes)


@pytest.mark.parametrize("limit, refusal", [("share", "TeamQueueFull"), ("quota", "QuotaExceeded")])
def test_two_concurrent_submits_of_a_team_cannot_both_pass_its_share_or_quota_on_sqlite(tmp_path, limit, refusal):
    store = PlanStore(f"sqlite:///{tmp_path}/race.db")
    try:
        assert creates_racing(store, ONE_FITS[limit]) == sorted(["created", refusal])
        assert store.usage("team-a").unfinished == 1
        store.create(tiny_workload(), team="team-b", admit=lambda usage: ONE_FITS[limit].judge("team-b", usage))
        assert store.usage("team-b").unfinished == 1  # another team's room is its own
    finally:
        store.close()
