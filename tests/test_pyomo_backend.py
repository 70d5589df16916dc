"""The Pyomo backend: a constraint written in Pyomo is obeyed by the plan, the solver hooks match the HiGHS backend,
statuses map exhaustively, and the module reaches Pyomo only through public names."""

from __future__ import annotations

import ast
import logging
import time
from pathlib import Path

import pyomo.environ as pyo
import pytest

import optsched
from optsched.model.data import ModelData
from optsched.solve import highs, pyomo_backend
from optsched.solve.backends import build_model
from optsched.solve.highs import Outcome, SolveRequest, map_pyomo_status
from optsched.solve.pyomo_backend import PyomoBuilder
from tests.conftest import plan_checked
from tests.support.factories import device, job, workload

# rack2 is twice as fast: without a rule, the high-priority job X takes it.
RACKS = workload(
    [
        device("slow-r1", "mid", 4, [(200, 1.0)], domain="rack1"),
        device("fast-r2", "fast", 4, [(300, 2.0)], domain="rack2"),
    ],
    [job("X", work=10.0, p=0.9, priority="high"), job("Y", work=10.0, p=0.9, priority="low")],
    options={"time_limit_s": 20, "mip_gap": 1e-7},
)


def keep_x_off_rack2(b: PyomoBuilder, data: ModelData) -> None:
    x = next(j for j, jb in enumerate(data.jobs) if jb.id == "X")
    on_rack2 = [o.key for o in data.options_of_job[x] if data.groups[o.group].domain == "rack2"]
    b.model.x_not_on_rack2 = pyo.Constraint(expr=sum(b.model.n[k] for k in on_rack2) == 0)


def devices_of(plan: optsched.Plan, job_id: str) -> set[str]:
    return {a.device for p in plan.placements if p.job == job_id for a in p.allocations}


def test_a_pyomo_constraint_keeps_job_x_off_rack2():
    free = plan_checked(RACKS, backend="pyomo")
    assert free.status == optsched.Status.optimal
    assert "fast-r2" in devices_of(free, "X")  # the rule below changes the answer
    assert free.objective == pytest.approx(plan_checked(RACKS, backend="highs").objective, rel=1e-6)

    ruled = plan_checked(RACKS, backend="pyomo", extra_functionality=keep_x_off_rack2)
    assert ruled.status == optsched.Status.optimal
    assert devices_of(ruled, "X") and "fast-r2" not in devices_of(ruled, "X")
    assert optsched.verify(RACKS, ruled) == []
    assert ruled.objective <= free.objective + 1e-9
    assert ruled.objective < free.objective  # rack2 was worth having


def hand_computed_builders():
    # Two p=0.5 jobs on 4 identical devices: optimum (2, 2), weighted speedup 2 * 2 * 4/3.
    w = optsched.Workload.load(workload([device("g", "m", 4, [(100, 1.0)])], [job("a", p=0.5), job("b", p=0.5)]))
    return build_model(ModelData(w), backend="pyomo"), build_model(ModelData(w), backend="highs")


def test_lp_relaxation_and_sub_mip_match_the_highs_backend_and_restore_the_model():
    via_pyomo, direct = hand_computed_builders()
    deadline = time.monotonic() + 20
    for b in (via_pyomo, direct):
        b.prepare()
    lp = [b.solve(SolveRequest(deadline, 0.0, relax=True)) for b in (via_pyomo, direct)]
    assert [r.outcome for r in lp] == [Outcome.optimal, Outcome.optimal]
    assert lp[0].bound == pytest.approx(lp[1].bound, rel=1e-7)
    assert via_pyomo.model.n[0, 0, 0].domain is pyo.Reals  # relaxed until the next integer solve

    mip = [b.solve(SolveRequest(deadline, 1e-9)) for b in (via_pyomo, direct)]
    assert [r.outcome for r in mip] == [Outcome.optimal, Outcome.optimal]
    assert mip[0].incumbent == pytest.approx(mip[1].incumbent, rel=1e-7)
    assert lp[0].bound >= mip[0].incumbent - 1e-9
    assert via_pyomo.model.n[0, 0, 0].domain is pyo.Integers
    counts = via_pyomo.values(mip[0], "n", [(0, 0, 0), (1, 0, 0)])
    assert counts == {(0, 0, 0): 2.0, (1, 0, 0): 2.0}

    # Job a limited to one device.
    box = {("n", (0, 0, 0)): (0.0, 1.0)}
    sub = [b.solve_within(box, SolveRequest(deadline, 1e-9)) for b in (via_pyomo, direct)]
    assert sub[0].incumbent == pytest.approx(sub[1].incumbent, rel=1e-7)
    assert via_pyomo.values(sub[0], "n", [(0, 0, 0)]) == {(0, 0, 0): 1.0}
    assert via_pyomo.model.n[0, 0, 0].ub == 4  # restored
    again = via_pyomo.solve(SolveRequest(deadline, 1e-9))
    assert again.incumbent == pytest.approx(mip[0].incumbent, rel=1e-9)


def test_values_are_aligned_with_columns():
    via_pyomo, _ = hand_computed_builders()
    result = via_pyomo.solve(SolveRequest(time.monotonic() + 20, 1e-9))
    for name in ("n", "h", "a", "S", "R", "s_host"):
        for key, var in getattr(via_pyomo.model, name).items():
            expected = var.value if var.value is not None else var.lb
            assert result.values[via_pyomo.column(name, key)] == pytest.approx(expected)


def test_every_termination_condition_is_mapped(caplog):
    from pyomo.contrib.solver.common.results import TerminationCondition as TC

    mapped = set(highs._termination_map())
    assert set(TC) - mapped == {TC.unknown}, "map the new termination conditions in map_pyomo_status"
    assert map_pyomo_status(TC.convergenceCriteriaSatisfied, True) is Outcome.optimal
    assert map_pyomo_status(TC.maxTimeLimit, True) is Outcome.limit_with_solution
    assert map_pyomo_status(TC.maxTimeLimit, False) is Outcome.limit_without_solution
    assert map_pyomo_status(TC.infeasibleOrUnbounded, False) is Outcome.infeasible
    with caplog.at_level(logging.WARNING, logger=highs.__name__):
        assert map_pyomo_status(TC.unknown, True) is Outcome.limit_with_solution
        assert map_pyomo_status(TC.unknown, False) is Outcome.error
    assert sum("unexpected termination condition" in r.message for r in caplog.records) == 2


@pytest.mark.parametrize("module", [pyomo_backend, highs])
def test_the_backend_uses_no_private_pyomo_name(module):
    """Only `self` may carry underscored attributes; nothing underscored is imported or looked up by name (the
    backend, and the status map of highs.py)."""
    tree = ast.parse(Path(module.__file__).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            assert isinstance(node.value, ast.Name) and node.value.id == "self", (node.attr, node.lineno)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pyomo"):
            assert not any(part.startswith("_") for part in node.module.split(".")), node.module
            assert not any(alias.name.startswith("_") for alias in node.names), node.lineno
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            assert not node.value.startswith("_"), (node.value, node.lineno)  # getattr(obj, "_private")
    assert not hasattr(PyomoBuilder, "highs")  # the planner never reaches into the highspy object


def test_pyomo_model_exposes_the_documented_components():
    m = optsched.pyomo_model(RACKS)
    assert isinstance(m, pyo.ConcreteModel)
    for name in ("n", "h", "a", "S", "R", "s_host"):
        assert isinstance(m.component(name), pyo.Var), name
    for family in ("device_capacity", "admission_min", "admission_max", "speedup_cut", "aggregate_speed"):
        assert isinstance(m.component(family), pyo.Constraint), family
    assert isinstance(m.objective, pyo.Objective)
    assert m.n[0, 1, 0].ub == 4 and m.n[0, 1, 0].is_integer()  # job X, group fast-r2, level 0
