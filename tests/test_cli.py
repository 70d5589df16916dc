"""`optsched plan`: outputs and exit codes (0 plan, 1 no plan, 2 invalid input)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from optsched.cli import app
from optsched.verify.placement import verify
from tests.support.factories import device, job, workload

runner = CliRunner()


def write(tmp_path, data, name="w.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def test_plan_prints_json_that_verifies(tmp_path):
    data = workload([device("g", "m", 2, [(100, 1.0)])], [job("a", priority="high", deadline_hours=10)])
    result = runner.invoke(app, ["plan", str(write(tmp_path, data))])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    assert plan["status"] == "optimal"
    assert verify(data, plan) == []


def test_plan_writes_output_file_and_table(tmp_path):
    data = workload([device("g", "m", 2, [(100, 1.0)])], [job("train-job")])
    out = tmp_path / "plan.json"
    result = runner.invoke(app, ["plan", str(write(tmp_path, data)), "-o", str(out), "--table"])
    assert result.exit_code == 0, result.output
    assert "train-job" in result.stdout and "optimal" in result.stdout
    assert json.loads(out.read_text())["status"] == "optimal"


def test_infeasible_exits_1_with_diagnosis_on_stderr_and_plan_on_stdout(tmp_path):
    data = workload([device("g", "m", 1, [(100, 1.0)])], [job("a", work=100, p=1.0, priority="high", deadline_hours=1)])
    result = runner.invoke(app, ["plan", str(write(tmp_path, data))])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["status"] == "infeasible"
    assert "best runtime 100 h" in result.stderr


def test_invalid_input_exits_2_listing_each_problem_without_traceback(tmp_path):
    data = workload([device("g", "m", 0, [(100, 1.0)])], [job("a", p=2.0)])
    result = runner.invoke(app, ["plan", str(write(tmp_path, data))])
    assert result.exit_code == 2
    assert "devices[0].count" in result.stderr and "jobs[0].parallel_fraction" in result.stderr
    assert "Traceback" not in result.output


def test_malformed_json_and_missing_file_exit_2(tmp_path):
    bad = runner.invoke(app, ["plan", str(write(tmp_path, "{not json"))])
    assert bad.exit_code == 2 and "not valid JSON" in bad.stderr
    missing = runner.invoke(app, ["plan", str(tmp_path / "nope.json")])
    assert missing.exit_code == 2 and "cannot read" in missing.stderr


def test_time_limit_and_gap_flags_are_applied(tmp_path):
    data = workload([device("g", "m", 2, [(100, 1.0)])], [job("a")])
    result = runner.invoke(app, ["plan", str(write(tmp_path, data)), "--time-limit", "5", "--gap", "0.01"])
    assert result.exit_code == 0
    bad = runner.invoke(app, ["plan", str(write(tmp_path, data)), "--gap", "7"])
    assert bad.exit_code == 2


def test_reads_standard_input():
    data = workload([device("g", "m", 1, [(100, 1.0)])], [job("a")])
    result = runner.invoke(app, ["plan", "-"], input=json.dumps(data))
    assert result.exit_code == 0 and json.loads(result.stdout)["status"] == "optimal"


def test_infeasible_plan_carries_suggestions_and_cli_prints_them(tmp_path):
    data = workload([device("g", "m", 2, [(100, 1.0)])], [job("a", work=10, p=1.0, priority="high", deadline_hours=4)])
    result = runner.invoke(app, ["plan", str(write(tmp_path, data))])
    assert result.exit_code == 1
    plan = json.loads(result.stdout)
    assert [s["kind"] for s in plan["suggestions"]] == ["extend_deadline"]
    assert plan["suggestions"][0]["needed"] == 5.0
    assert "extend job 'a''s deadline by 1.00 h (to 5.00 h)" in result.stderr
