"""Promise 7: access control. With OPTSCHED_API_TOKEN set, every route but the public few (health, the OpenAPI
document and its docs page, the stylesheet) answers 401 without the token: all of /v1 and the HTML viewer
with its charts, enumerated from the app's url_map so that a new route cannot escape. No response echoes the
token, the database path or a traceback; the SQLite file (and its WAL files) are private to the owner
whatever the umask; resource ids are UUID4."""

from __future__ import annotations

import stat
import sys
import uuid
from pathlib import Path

import pytest
import requests

from api import services
from optsched.infra.store import PlanStore
from tests.api.helpers import tiny_workload
from tests.support.api_testing import GOOD, SECRET_NAME, TOKEN, WRONG, protected_routes, url_for_rule

pytestmark = pytest.mark.slow  # real servers and solver processes, at CI's budgets


@pytest.fixture
def guarded(make_app):
    # Hundreds of wrong tokens from one address: the guess throttle (tests/api/test_api_tenants.py) is set out of
    # the way, so that each answer is the token check's own.
    app = make_app(API_TOKEN=TOKEN, AUTH_FAILURE_BURST=1_000_000)
    client = app.test_client()
    data = tiny_workload(SECRET_NAME)
    created = client.post("/v1/plans", json=data, headers=GOOD)
    assert created.status_code == 202
    return app, client, created.get_json()["id"]


def test_every_route_but_the_public_ones_answers_401_without_the_token(guarded):
    app, client, plan_id = guarded
    routes = protected_routes(app)
    rules = {rule for _, rule, _ in routes}
    assert {"/v1/plans", "/v1/plans/<plan_id>", "/v1/verify"} <= rules, rules
    checked = 0
    for method, _, endpoint in routes:
        url = url_for_rule(app, endpoint, plan_id)
        for why, headers in WRONG.items():
            response = client.open(url, method=method, headers=headers, json=tiny_workload())
            assert response.status_code == 401, (method, url, why, response.status_code)
            assert response.headers["WWW-Authenticate"].startswith("Bearer"), (method, url)
            text = response.get_data(as_text=True)
            assert SECRET_NAME not in text and TOKEN not in text, (method, url, why)
            checked += 1
    assert checked == len(routes) * len(WRONG)


def test_the_token_opens_the_routes_so_the_401s_above_are_the_tokens_doing(guarded):
    app, client, plan_id = guarded
    for method, rule, endpoint in protected_routes(app):
        if method != "GET":
            continue
        response = client.get(url_for_rule(app, endpoint, plan_id), headers=GOOD)
        assert response.status_code != 401, (rule, response.status_code)
    assert client.get(f"/v1/plans/{plan_id}", headers=GOOD).get_json()["plan"] is None  # queued: no solver here


def test_public_routes_stay_open_without_the_token(guarded):
    _, client, _ = guarded
    for url in ("/healthz", "/readyz", "/openapi.json"):
        assert client.get(url).status_code == 200, url


def test_errors_never_echo_the_token_internals_or_a_traceback(guarded, monkeypatch, caplog):
    app, client, plan_id = guarded
    database = str(Path(services(app).store.url.split("///", 1)[1]))
    leak = f"{TOKEN} {database} /etc/shadow"

    def broken(*args, **kwargs):
        raise RuntimeError(f"internal failure: {leak}")

    store = services(app).store
    for name in ("get", "list", "create", "ping"):
        monkeypatch.setattr(store, name, broken)
    responses = [
        client.get(f"/v1/plans/{plan_id}", headers=GOOD),
        client.get("/v1/plans", headers=GOOD),
        client.post("/v1/plans", json=tiny_workload(), headers=GOOD),
        client.get(f"/plans/{plan_id}", headers=GOOD),
        client.get("/readyz"),
    ]
    for response in responses:
        assert response.status_code in (500, 503), response.status_code
        text = response.get_data(as_text=True) + " ".join(f"{k}: {v}" for k, v in response.headers.items())
        for secret in (TOKEN, database, "/etc/shadow", "internal failure", "Traceback", 'File "'):
            assert secret not in text, (secret, text[:500])
    assert "internal failure" in caplog.text  # it is logged on the server side instead


def test_ids_are_uuid4(make_app):
    client = make_app(QUEUE_SIZE=1000).test_client()
    ids = [client.post("/v1/plans", json=tiny_workload(f"w{i}")).get_json()["id"] for i in range(200)]
    parsed = [uuid.UUID(hex=i) for i in ids]
    assert all(u.version == 4 and u.variant == uuid.RFC_4122 for u in parsed)
    assert len({i[:8] for i in ids}) == len(ids)  # no shared prefixes: random, not time-ordered


def test_the_real_servers_sqlite_files_are_private_whatever_the_umask(live_server, tmp_path):
    optsched = Path(sys.executable).with_name("optsched")
    folder = tmp_path / "fresh" / "var"
    server = live_server("private", command=["/bin/sh", "-c", 'umask 000 && exec "$0" serve "$@"', str(optsched)])
    server.database = folder / "plans.db"
    base = server.start()
    assert requests.post(f"{base}/v1/plans", json=tiny_workload(), timeout=30).status_code in (201, 202)
    files = [server.database, Path(f"{server.database}-wal"), Path(f"{server.database}-shm")]
    for path in files:
        assert path.exists(), path
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, (path, oct(path.stat().st_mode))
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_an_existing_folder_others_can_read_is_tightened_but_a_shared_sticky_one_is_left_alone(tmp_path):
    ours = tmp_path / "ours"
    ours.mkdir(mode=0o755)
    ours.chmod(0o755)
    store = PlanStore(f"sqlite:///{ours}/plans.db")
    store.close()
    assert stat.S_IMODE(ours.stat().st_mode) == 0o700
    assert stat.S_IMODE((ours / "plans.db").stat().st_mode) == 0o600
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)  # like /tmp: tightening it would lock the other users out
    store = PlanStore(f"sqlite:///{shared}/plans.db")
    store.close()
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777
    assert stat.S_IMODE((shared / "plans.db").stat().st_mode) == 0o600
