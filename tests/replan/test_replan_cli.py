"""`optsched replan WORKLOAD PLAN CHANGE -o NEW.json`: outputs and exit codes (0 plan, 1 no plan, 2 invalid input)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

import optsched
from optsched.cli import app
from optsched.replan import apply_change
from optsched.verify.placement import verify
from tests.support.factories import device, job, workload

runner = CliRunner()

BASE = workload(
    [device("g1", "m1", 4, [(100.0, 1.0)]), device("g2", "m2", 2, [(200.0, 2.0)])],
    [job("a", priority="high", deadline_hours=6.0, p=0.9), job("b", p=0.9)],
)


def files(tmp_path, change, base=BASE):
    w, p, c = tmp_path / "w.json", tmp_path / "plan.json", tmp_path / "change.json"
    w.write_text(json.dumps(base))
    current = optsched.plan(base)
    assert verify(base, current) == []
    p.write_text(current.model_dump_json())
    c.write_text(json.dumps(change) if not isinstance(change, str) else change)
    return w, p, c


def test_replan_writes_a_plan_that_verifies_on_the_changed_workload(tmp_path):
    w, p, c = files(tmp_path, {"device_failures": [{"device": "g2", "count": 1}]})
    new, changed, whole = tmp_path / "new.json", tmp_path / "changed.json", tmp_path / "replan.json"
    result = runner.invoke(app, ["replan", str(w), str(p), str(c), "-o", str(new), "--workload-out", str(changed),
                                 "--result", str(whole)])
    assert result.exit_code == 0, result.output
    plan = json.loads(new.read_text())
    assert plan["status"] == "optimal"
    assert verify(json.loads(changed.read_text()), plan) == []
    document = json.loads(whole.read_text())
    assert document["plan"] == plan and {c["job"] for c in document["changes"]} == {"a", "b"}
    assert "moved" in result.stderr and "restart" in result.stderr  # the change summary
    assert result.stdout == ""  # the plan went to -o


def test_replan_chains_on_its_own_outputs(tmp_path):
    w, p, c = files(tmp_path, {"budget_w": 500})
    new, changed = tmp_path / "new.json", tmp_path / "changed.json"
    first = runner.invoke(app, ["replan", str(w), str(p), str(c), "-o", str(new), "--workload-out", str(changed)])
    assert first.exit_code == 0, first.output
    # A repair brings back a device that failed: the second change fails one of g2 and repairs one of g1 in one go
    # (repairs beyond the group's count are refused: tests/replan/test_check_change.py).
    c.write_text(
        json.dumps(
            {
                "device_failures": [{"device": "g2", "count": 1}, {"device": "g1", "count": 1}],
                "device_repairs": [{"device": "g1", "count": 1}],
                "budget_w": 800,
            }
        )
    )
    second = runner.invoke(app, ["replan", str(changed), str(new), str(c)])
    assert second.exit_code == 0, second.output
    plan = json.loads(second.stdout)  # without -o the plan goes to stdout
    after = apply_change(optsched.Workload.load(changed), json.loads(c.read_text()))
    assert verify(after, plan) == []


def test_infeasible_change_exits_1_with_diagnosis_and_suggestions(tmp_path):
    # 'a' (high, 6 h deadline on 10 h of work) needs more than what is left after g2 and 3 of g1 fail.
    w, p, c = files(tmp_path, {"device_failures": [{"device": "g2", "count": 2}, {"device": "g1", "count": 3}]})
    result = runner.invoke(app, ["replan", str(w), str(p), str(c), "-o", str(tmp_path / "new.json")])
    assert result.exit_code == 1, result.output
    assert json.loads((tmp_path / "new.json").read_text())["status"] == "infeasible"
    assert "infeasible:" in result.stderr and "would make it feasible:" in result.stderr


def test_invalid_change_exits_2_with_every_path(tmp_path):
    w, p, c = files(tmp_path, {"device_failures": [{"device": "nope", "count": 1}], "pin": ["zz"], "budget_w": 1})
    result = runner.invoke(app, ["replan", str(w), str(p), str(c)])
    assert result.exit_code == 2, result.output
    assert "invalid change (2 problem(s))" in result.stderr
    assert "device_failures[0].device" in result.stderr and "pin[0]" in result.stderr


def test_invalid_json_change_and_mismatched_plan_exit_2(tmp_path):
    w, p, c = files(tmp_path, "{not json")
    result = runner.invoke(app, ["replan", str(w), str(p), str(c)])
    assert result.exit_code == 2 and "invalid change" in result.stderr and "not valid JSON" in result.stderr
    c.write_text("{}")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**BASE, "devices": BASE["devices"][:1]}))
    result = runner.invoke(app, ["replan", str(other), str(p), str(c)])
    assert result.exit_code == 2 and "invalid plan" in result.stderr and ".device" in result.stderr
    result = runner.invoke(app, ["replan", str(tmp_path / "missing.json"), str(p), str(c)])
    assert result.exit_code == 2 and "invalid workload" in result.stderr
