"""The power-speedup frontier: monotone, dense enough, every point a verified plan, CLI outputs."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import optsched
from optsched.cli import app
from optsched.explain.frontier import frontier
from tests.support.factories import device, job, workload


def small():
    return workload(
        [device("fast", "f", 3, [(300, 2.0), (200, 1.6), (120, 1.0)], idle_w=20, domain="r1"),
         device("slow", "s", 4, [(150, 0.8), (80, 0.5)], idle_w=10, domain="r2")],
        [job("a", work=20, p=0.95, priority="high", deadline_hours=12), job("b", work=10, p=0.8),
         job("c", work=30, p=0.99, priority="low")],
        power={"budget_w": 900},
        options={"mip_gap": 1e-4, "time_limit_s": 10},
    )


def test_frontier_is_monotone_dense_and_spans_least_feasible_to_saturation():
    result = frontier(small())
    speeds = [p.weighted_speedup for p in result.points]
    assert len(result.points) >= 12
    assert speeds == sorted(speeds)
    assert result.points[0].budget_w == pytest.approx(result.least_feasible_w)
    assert result.points[-1].budget_w == pytest.approx(result.saturation_w)
    assert result.least_feasible_w < result.saturation_w
    # Below the least feasible budget the hard job cannot be placed; at it, it can.
    below = optsched.plan({**small(), "power": {"budget_w": result.least_feasible_w - 5}})
    assert below.status == optsched.Status.infeasible
    assert all(p.status == optsched.Status.optimal for p in result.points)
    assert result.least_feasible_w <= result.knee_budget_w <= result.saturation_w
    # Past saturation more power buys nothing.
    more = optsched.plan({**small(), "power": {"budget_w": result.saturation_w * 2}})
    assert more.weighted_speedup == pytest.approx(speeds[-1], rel=1e-4)


def test_given_budgets_are_planned_exactly_and_each_point_verifies():
    budgets = [600.0, 800.0, 1000.0]
    result = frontier(small(), budgets)
    assert [p.budget_w for p in result.points] == budgets
    for p in result.points:
        at_budget = {**small(), "power": {"budget_w": p.budget_w}}
        plan = optsched.plan(at_budget)
        assert optsched.verify(at_budget, plan) == []
        assert p.weighted_speedup == pytest.approx(plan.weighted_speedup, rel=2e-4)
        assert p.power_w <= p.budget_w + 1e-6


def test_no_curve_when_hard_jobs_cannot_run_at_all():
    w = workload([device("g", "m", 1, [(100, 1.0)], memory_gb=16)], [job("a", priority="high", memory_gb=80)])
    result = frontier(w)
    assert result.points == () and "80 GB" in result.reason


def test_cli_writes_json_and_png(tmp_path):
    path = tmp_path / "w.json"
    path.write_text(json.dumps(small()))
    out, png = tmp_path / "f.json", tmp_path / "f.png"
    result = CliRunner().invoke(app, ["frontier", str(path), "-o", str(out), "--png", str(png)])
    assert result.exit_code == 0, result.output
    assert len(json.loads(out.read_text())["points"]) >= 12
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
