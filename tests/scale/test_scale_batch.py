"""`optsched batch`: every workload planned, plans beside batch-summary.json, reruns solve nothing twice."""

from __future__ import annotations

import json
import subprocess

import pytest
from typer.testing import CliRunner

from optsched.cli import app
from optsched.service.batch import SUMMARY_FILE, canonical_sha256
from optsched.testing.instances import generate
from optsched.verify.placement import verify
from tests.api.helpers import tiny_workload
from tests.scale.conftest import OPTSCHED

pytestmark = pytest.mark.slow  # RQ workers on real Redis and PostgreSQL

runner = CliRunner()


@pytest.fixture
def clusters(tmp_path):
    """Three small clusters' workloads in a directory, as a night's batch would bring them."""
    folder = tmp_path / "clusters"
    folder.mkdir()
    documents = {
        "tiny": tiny_workload("tiny"),
        "s1": generate("S", 1).model_dump(mode="json", exclude_none=True),
        "s2": generate("S", 2).model_dump(mode="json", exclude_none=True),
    }
    for name, document in documents.items():
        (folder / f"{name}.json").write_text(json.dumps(document))
    return folder, documents


def check_outputs(out, documents, *, reused: bool) -> dict:
    """Each workload has a verified plan file whose figures the summary repeats; `reused` as expected."""
    summary = json.loads((out / SUMMARY_FILE).read_text())
    by_name = {e["name"]: e for e in summary["workloads"]}
    assert set(by_name) == set(documents)
    for name, document in documents.items():
        entry = by_name[name]
        plan = json.loads((out / entry["plan"]).read_text())
        assert verify(document, plan) == []
        assert entry["status"] == plan["status"] == "optimal"
        assert entry["sha256"] == canonical_sha256(document)
        assert (entry["objective"], entry["power_w"], entry["solve_seconds"]) == (
            plan["objective"], plan["power_w"], plan["solve_seconds"]
        )
        assert entry["reused"] is reused
    return summary


def test_a_local_batch_plans_every_workload_and_a_rerun_solves_none_again(clusters, tmp_path, monkeypatch):
    for variable in ("OPTSCHED_QUEUE_URL", "OPTSCHED_DATABASE_URL"):
        monkeypatch.delenv(variable, raising=False)
    folder, documents = clusters
    out = tmp_path / "plans"

    documents["tiny2"] = documents["tiny"]  # the same workload twice (listed after tiny.json): solved once
    (folder / "tiny2.json").write_text((folder / "tiny.json").read_text())

    first = runner.invoke(app, ["batch", str(folder), "--out", str(out), "--workers", "1"])
    assert first.exit_code == 0, first.output
    summary = check_outputs(out, documents, reused=False)
    assert summary["submitted_by_this_run"] == 3 and summary["queue"].startswith("local")
    ids = {e["name"]: e["id"] for e in summary["workloads"]}
    assert ids["tiny"] == ids["tiny2"] and len(set(ids.values())) == 3
    plan_bytes = {p.name: p.read_bytes() for p in out.glob("*.plan.json")}

    again = runner.invoke(app, ["batch", str(folder / "*.json"), "--out", str(out)])
    assert again.exit_code == 0, again.output
    assert "submitted 0, reused 4" in again.stdout
    check_outputs(out, documents, reused=True)
    assert {p.name: p.read_bytes() for p in out.glob("*.plan.json")} == plan_bytes

    documents["s2"]["power"]["budget_w"] -= 100  # one cluster changed: only it is solved again
    (folder / "s2.json").write_text(json.dumps(documents["s2"]))
    changed = runner.invoke(app, ["batch", str(folder), "--out", str(out)])
    assert changed.exit_code == 0, changed.output
    assert "submitted 1, reused 3" in changed.stdout


def test_invalid_inputs_are_all_listed_and_nothing_is_submitted(tmp_path):
    (tmp_path / "bad.json").write_text(json.dumps({"devices": [], "jobs": [{"id": "a"}]}))
    (tmp_path / "broken.json").write_text("{not json")
    out = tmp_path / "plans"
    result = runner.invoke(app, ["batch", str(tmp_path / "bad.json"), str(tmp_path / "broken.json"),
                                 str(tmp_path / "missing.json"), "--out", str(out)])
    assert result.exit_code == 2
    for expected in ("bad.json: jobs[0].work_hours", "broken.json:", "missing.json: no such file"):
        assert expected in result.stderr, result.stderr
    assert not out.exists()


def test_a_batch_fans_out_to_rq_workers_end_to_end(clusters, tmp_path, workers, worker_env):
    folder, documents = clusters

    def batch(out) -> dict:
        done = subprocess.run([str(OPTSCHED), "batch", str(folder / "*.json"), "--out", str(out), "--wait"],
                              env=worker_env, capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        return json.loads((out / SUMMARY_FILE).read_text())

    summary = batch(tmp_path / "plans")
    check_outputs(tmp_path / "plans", documents, reused=False)
    assert summary["queue"].startswith("rq redis://") and summary["submitted_by_this_run"] == 3

    elsewhere = batch(tmp_path / "other")  # a fresh directory: the shared store already has every plan
    check_outputs(tmp_path / "other", documents, reused=True)
    assert elsewhere["submitted_by_this_run"] == 0
