"""`optsched queueing`: the result JSON on stdout, exit 0 stable and targets met, 1 unstable or targets missed,
2 invalid input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optsched.cli import app
from tests.queueing.queueing_factories import klass, study

runner = CliRunner()
SEASON = Path(__file__).resolve().parents[2] / "models" / "studies" / "season.json"


def write(tmp_path, doc, name="s.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return path


def test_the_sample_study_prints_its_result_and_chooses_per_priority_caps():
    result = runner.invoke(app, ["queueing", str(SEASON)])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["status"] == "ok" and out["stable"] and out["meets_targets"]
    assert out["caps"] == {"deadline-finetunes": 300.0, "experiments": 267.0, "sweeps": 267.0}
    assert [c["name"] for c in out["classes"]] == ["deadline-finetunes", "experiments", "sweeps"]
    assert out["front"] and out["combinations_evaluated"] == 64


def test_output_file_and_front_plot(tmp_path):
    out, png = tmp_path / "r.json", tmp_path / "front.png"
    result = runner.invoke(app, ["queueing", str(SEASON), "-o", str(out), "--png", str(png)])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["study"] == "season"
    assert png.read_bytes().startswith(b"\x89PNG")


@pytest.mark.slow
def test_simulation_method_reports_half_widths(tmp_path):
    doc = study([klass("hi", "high", 0.3, 1.0), klass("lo", "low", 0.3, 1.0)])
    result = runner.invoke(app, ["queueing", str(write(tmp_path, doc)), "--method", "simulation", "--replications", "3",
                                 "--jobs", "500"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["method"] == "simulation" and out["simulation"]["replications"] == 3
    assert all(c["response_half_width_hours"] > 0 for c in out["classes"])


def test_unstable_exits_1_with_the_reason_on_stderr(tmp_path):
    result = runner.invoke(app, ["queueing", str(write(tmp_path, study([klass("a", "high", 2.0, 1.0)])))])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["stable"] is False
    assert "unstable" in result.stderr and "offered load" in result.stderr


def test_targets_missed_exits_1(tmp_path):
    doc = study([klass("a", "high", 0.5, 1.0, cap_w=None)], targets={"a": 1.1})
    result = runner.invoke(app, ["queueing", str(write(tmp_path, doc))])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["status"] == "targets_missed"
    assert "target 1.1 h" in result.stderr


def test_invalid_input_exits_2_with_every_path(tmp_path):
    doc = study([klass("a", "high", "0.5", 1.0)])
    doc["devices"][0]["count"] = True
    result = runner.invoke(app, ["queueing", str(write(tmp_path, doc))])
    assert result.exit_code == 2
    assert "invalid study" in result.stderr
    assert "classes[0].arrival_rate_per_hour" in result.stderr and "devices[0].count" in result.stderr
    assert result.stdout == ""


def test_unknown_method_and_unreadable_file_exit_2(tmp_path):
    assert runner.invoke(app, ["queueing", str(SEASON), "--method", "guess"]).exit_code == 2
    assert runner.invoke(app, ["queueing", str(tmp_path / "none.json")]).exit_code == 2
    assert runner.invoke(app, ["queueing", str(write(tmp_path, "{oops"))]).exit_code == 2


def test_standard_input(tmp_path):
    result = runner.invoke(app, ["queueing", "-"], input=json.dumps(study([klass("a", "high", 0.5, 1.0)])))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["classes"][0]["mean_response_hours"] == 2.0  # M/M/1: 1 / (1 - 0.5)
