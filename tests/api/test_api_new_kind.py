"""Adding a resource kind is one module: the kind below (a placement baseline as a resource) is declared here
only, registered, and gets its routes, OpenAPI operations, resource model, statuses and solve."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from api import create_app, shutdown
from optsched.baselines import BASELINES
from optsched.infra.pool import SolveTask
from optsched.infra.store import JobState, PlanRecord
from optsched.schema.plan import Plan, Status
from optsched.schema.workload import Workload
from optsched.service.kinds import KINDS, KindSpec, register, solve_task, statuses_of
from optsched.service.kinds.base import Submission, Texts, time_limit_s
from optsched.verify.placement import verify
from tests.api.helpers import tiny_workload


class BaselineRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    workload: Workload
    rule: str = Field(default="greedy", pattern="^(" + "|".join(BASELINES) + ")$", description="The placement rule.")


def solve(task: SolveTask) -> Plan:
    return BASELINES[task.params["rule"]](task.workload)


def prepare(body: BaselineRequest, raw: Any, settings: Mapping[str, Any], parent: PlanRecord | None) -> Submission:
    return Submission(raw["workload"], {"rule": body.rule})


BASELINE = KindSpec(
    name="baseline",
    noun="baseline",
    collection="baselines",
    camel="Baseline",
    id_param="baseline_id",
    request=BaselineRequest,
    result=Plan,
    result_field="plan",
    solve=solve,
    verdict=lambda result: result.status.value,
    verdicts=tuple(s.value for s in Status),
    budget_s=lambda workload, params: time_limit_s(workload),
    prepare=prepare,
    page=None,
    texts=Texts(
        tag="baselines",
        tag_description="What a placement rule does with a workload.",
        submit_summary="Submit a workload to a placement rule",
        submit_description="Stores the workload and queues the rule; 202 at once.",
        invalid="The workload or the rule fails validation",
        get_description="The baseline resource.",
        delete_description="Cancel (200) or delete (204).",
        resource_description="A workload placed by a baseline rule.",
        status_description="queued and solving are transient; the others are the rule's plan status.",
        result_description="The rule's plan; null until it ran.",
    ),
)


@pytest.fixture
def baseline_kind() -> Iterator[KindSpec]:
    register(BASELINE)
    try:
        yield BASELINE
    finally:
        del KINDS[BASELINE.name]


@pytest.fixture
def app(baseline_kind, tmp_path):
    app = create_app({"DATABASE_URL": f"sqlite:///{tmp_path}/kinds.db", "START_WORKERS": False, "AUTH": "off"})
    yield app
    shutdown(app)


def test_a_registered_kind_gets_its_operations_and_models(app):
    paths = app.api_doc["paths"]
    assert paths["/v1/baselines"]["post"]["operationId"] == "createBaseline"
    assert {op["operationId"] for op in paths["/v1/baselines/{baseline_id}"].values()} == {
        "getBaseline", "deleteBaseline"
    }
    schemas = app.api_doc["components"]["schemas"]
    assert schemas["BaselineStatus"]["enum"] == list(statuses_of(BASELINE))
    assert "plan" in schemas["BaselineResource"]["properties"] and "BaselineRequest" in schemas


def test_a_registered_kind_is_submitted_solved_read_and_deleted(app):
    client, data = app.test_client(), tiny_workload()
    response = client.post("/v1/baselines", json={"workload": data, "rule": "greedy"})
    assert response.status_code == 202 and response.json["status"] == "queued"
    location = response.headers["Location"]
    resource_id = response.json["id"]
    assert location == f"/v1/baselines/{resource_id}"
    assert client.post("/v1/baselines", json={"workload": data, "rule": "nope"}).status_code == 422
    assert client.get(f"/v1/plans/{resource_id}").status_code == 404  # each kind has its own URL space

    # What a worker does with the row: the registry's solve, recorded on the claim.
    store = app.extensions["optsched"].store
    claimed = store.claim(resource_id)
    outcome, (verdict, document) = solve_task(SolveTask.of(claimed, threads=1))
    assert outcome == "result" and verdict in BASELINE.verdicts
    assert store.finish(resource_id, claimed.attempts, JobState.finished, verdict=verdict, plan=document)

    body = client.get(location).json
    assert body["status"] == verdict and body["plan"]["placements"]
    assert verify(data, body["plan"]) == []
    assert client.delete(location).status_code == 204
    assert client.get(location).status_code == 404


def test_a_kind_whose_names_are_taken_is_refused(baseline_kind):
    with pytest.raises(ValueError, match="clashes"):
        register(KINDS["plan"])
