"""The served spec is what external tools take: openapi-spec-validator accepts it (with and without a token), and
a client that openapi-python-client generates from it (offline, into a temporary folder) runs every operation
against a live server on loopback: creates from the spec's own examples, follows the spec's links to read,
draw (PNG as bytes) and delete what it created."""

from __future__ import annotations

import importlib
import inspect
import json
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import requests
from openapi_spec_validator import validate

from api.examples import BODIES
from tests.hardening.conftest import TOKEN
from tests.support.server import LiveServer

pytestmark = pytest.mark.slow  # a generated client against a real server

GENERATOR = Path(sys.executable).with_name("openapi-python-client")
FINAL_WAIT_S = 120


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = tmp_path_factory.mktemp("client-server")
    live = LiveServer(database=folder / "plans.db", log=folder / "server.log", workers=1, threads=4,
                      env={"OPTSCHED_API_TOKEN": TOKEN})
    live.start()
    yield live
    live.kill()


def test_the_served_spec_validates_with_and_without_a_token(served, make_app):
    with_token = requests.get(f"{served.base}/openapi.json", timeout=10).json()
    validate(with_token)
    without = make_app().test_client().get("/openapi.json").get_json()
    validate(without)
    v1 = [op for path, item in with_token["paths"].items() if path.startswith("/v1/") for op in item.values()]
    assert all(op["security"] == [{"bearerAuth": []}] and "401" in op["responses"] for op in v1)
    v1 = [op for path, item in without["paths"].items() if path.startswith("/v1/") for op in item.values()]
    assert all("security" not in op and "401" not in op["responses"] for op in v1)
    assert "securitySchemes" not in without["components"] and "security" not in without


def test_every_operation_has_examples_and_every_create_links_to_its_resource(served):
    spec = requests.get(f"{served.base}/openapi.json", timeout=10).json()
    for path, item in spec["paths"].items():
        for method, op in item.items():
            body = op.get("requestBody", {}).get("content", {}).get("application/json")
            if body is not None:
                assert "example" in body, op["operationId"]
            for parameter in op.get("parameters", []):
                assert "example" in parameter, (op["operationId"], parameter["name"])
            for status in ("408", "431", "400"):
                assert status in op["responses"], (op["operationId"], status)
            if method == "post" and re.fullmatch(r"/v1/[\w-]+", path) and path != "/v1/verify":
                links = op["responses"]["202"]["links"]
                targets = {link["operationId"] for link in links.values()}
                assert any(t.startswith("get") for t in targets) and any(t.startswith("delete") for t in targets)
            for response in op["responses"].values():
                if "image/png" in response.get("content", {}):
                    assert "application/octet-stream" in response["content"]


def _generate(spec: dict, folder: Path):
    """The client package generated from `spec`, imported from `folder` (offline: no network is used)."""
    name = f"optsched_client_{uuid.uuid4().hex[:8]}"
    (folder / "spec.json").write_text(json.dumps(spec))
    (folder / "config.json").write_text(json.dumps({"post_hooks": [], "project_name_override": name,
                                                    "package_name_override": name}))
    done = subprocess.run(
        [str(GENERATOR), "generate", "--path", str(folder / "spec.json"), "--output-path", str(folder / name),
         "--meta", "none", "--config", str(folder / "config.json")],
        capture_output=True, text=True, timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Unsupported content_type" not in done.stdout + done.stderr, done.stdout
    sys.path.insert(0, str(folder))
    return importlib.import_module(name), name


def _functions(package, name: str) -> dict[str, object]:
    """operationId in snake case -> its generated module."""
    found = {}
    for group in (Path(package.__file__).parent / "api").iterdir():
        if group.is_dir() and (group / "__init__.py").exists():
            for module in group.glob("*.py"):
                if module.stem != "__init__":
                    found[module.stem] = importlib.import_module(f"{name}.api.{group.name}.{module.stem}")
    return found


def _snake(operation_id: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", operation_id).lower()


def _body_class(module):
    annotation = inspect.signature(module.sync_detailed).parameters["body"].annotation
    return getattr(module, annotation) if isinstance(annotation, str) else annotation


def test_a_generated_client_runs_every_operation(served, tmp_path):
    spec = requests.get(f"{served.base}/openapi.json", timeout=10).json()
    package, name = _generate(spec, tmp_path)
    try:
        modules = _functions(package, name)
        client = package.AuthenticatedClient(base_url=served.base, token=TOKEN, raise_on_unexpected_status=True)
        ops = {
            op["operationId"]: (path, method, op) for path, item in spec["paths"].items() for method, op in item.items()
        }
        called: dict[str, int] = {}

        def call(operation_id: str, **kwargs):
            response = modules[_snake(operation_id)].sync_detailed(client=client, **kwargs)
            called[operation_id] = response.status_code
            return response

        # Who creates the id each path parameter needs, from the spec's links.
        creator_of: dict[str, str] = {}
        for op_id, (_path, _method, op) in ops.items():
            for response in op["responses"].values():
                for link in response.get("links", {}).values():
                    creator_of[link["operationId"]] = op_id
        created: dict[str, str] = {}

        def kwargs_for(op_id: str) -> dict:
            path, _method, op = ops[op_id]
            args = {}
            for parameter in op.get("parameters", []):
                if parameter["in"] == "path":
                    args[parameter["name"]] = created[creator_of[op_id]]
            if "requestBody" in op:
                args["body"] = _body_class(modules[_snake(op_id)]).from_dict(BODIES[op_id])
            return args

        def wait_final(creator: str) -> None:
            reader = next(t for t, c in creator_of.items()
                          if c == creator and ops[t][1] == "get" and ops[t][0].endswith("}"))
            deadline = time.monotonic() + FINAL_WAIT_S
            while call(reader, **kwargs_for(reader)).parsed.status.value in ("queued", "solving"):
                assert time.monotonic() < deadline, f"{creator} did not finish"
                time.sleep(0.2)

        for op_id in ("healthz", "readyz", "listPlans", "verifyPlan"):
            assert call(op_id, **kwargs_for(op_id)).status_code == 200, op_id
        # Creates that need no id, then those that need one (a re-plan of a finished plan), each waited for.
        for needs_id in (False, True):
            for op_id, (path, method, _) in ops.items():
                if method != "post" or op_id not in creator_of.values() or ("{" in path) != needs_id:
                    continue
                response = call(op_id, **kwargs_for(op_id))
                assert response.status_code in (201, 202), (op_id, response.content[:300])
                created[op_id] = response.parsed.id
                wait_final(op_id)
        for op_id, (path, method, _) in ops.items():
            if method == "get" and op_id not in called and creator_of.get(op_id) in created:
                response = call(op_id, **kwargs_for(op_id))
                assert response.status_code == 200, (op_id, response.content[:300])
                if path.endswith(".png"):
                    assert response.parsed.payload.read().startswith(b"\x89PNG"), op_id
        for op_id, (_, method, _) in ops.items():
            if method == "delete" and creator_of.get(op_id) in created:
                assert call(op_id, **kwargs_for(op_id)).status_code == 204, op_id
        assert set(called) == set(ops), sorted(set(ops) - set(called))
    finally:
        sys.path.remove(str(tmp_path))
        for module in [m for m in sys.modules if m == name or m.startswith(f"{name}.")]:
            del sys.modules[module]
