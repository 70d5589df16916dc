"""Violations and diagnoses name the model's constraint families and keys (`power_budget[rackA]`), the same
names the MILP gives its rows, so that a user can search the code for what failed."""

from __future__ import annotations

import re
from pathlib import Path

import optsched
from optsched.model.data import ModelData
from optsched.schema.names import Family, constraint_name
from optsched.solve.backends import build_model
from optsched.verify.placement import verify
from tests.support.factories import device, job, workload
from tests.test_verify import CORRECT, base_workload, build_plan, correct_plan

NAME = re.compile(r"^(\w+)\[([^\]]+)\]: ")
CONSTRAINTS = Path(optsched.__file__).parent / "model" / "constraints.py"


def names_in(messages: list[str]) -> list[tuple[str, str]]:
    return [m.groups() for m in map(NAME.match, messages) if m]


def test_every_family_is_added_by_the_model_under_its_own_name():
    source = CONSTRAINTS.read_text()
    for family in Family:
        assert f"Family.{family.name}" in source, family


def test_the_models_rows_carry_the_families_that_violations_name():
    b = build_model(ModelData(base_workload(budget_w=1300, train_deadline=2.0)))
    families = {family for family, _ in b.row_keys}
    assert {Family.device_capacity, Family.power_budget, Family.deadline} <= families


def test_violations_name_the_family_and_key():
    assert names_in(verify(base_workload(budget_w=1300), correct_plan())) == [("power_budget", "fleet")]
    assert names_in(verify(base_workload(domains={"rackA": 1000, "rackB": 400}), correct_plan())) == [
        ("power_budget", "rackA")
    ]
    w = base_workload(train_deadline=2.0)
    assert names_in(verify(w, build_plan(w, CORRECT))) == [("deadline", "train")]


def test_a_diagnosis_names_the_budget_it_cannot_meet():
    w = workload(
        [device("g", "A100", 2, [(100, 1.0)], idle_w=10, domain="rack2")],
        [job("hot", 1.0, priority="critical")],
        power={"domains": {"rack2": 50}},
    )
    result = optsched.plan(w)
    assert result.status is optsched.Status.infeasible
    assert any(d.startswith(constraint_name(Family.power_budget, "rack2") + ": ") for d in result.diagnosis), (
        result.diagnosis
    )
