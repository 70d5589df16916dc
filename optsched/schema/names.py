"""Structured constraint names (PyPSA's habit): the model's row families and how one row is named, so that a
diagnosis, a verifier violation and the model's rows say the same thing, e.g. `power_budget[rack1]`, and a user
can search the code for it (optsched/model/constraints.py adds each family in `add_<family>` or beside it)."""

from __future__ import annotations

from enum import StrEnum

FLEET = "fleet"  # the key of the whole fleet's budget (power.budget_w), beside the domains' names


class Family(StrEnum):
    aggregate_speed = "aggregate_speed"
    host_speed = "host_speed"
    device_capacity = "device_capacity"
    admission_min = "admission_min"
    admission_max = "admission_max"
    must_run = "must_run"  # the lower bound 1 on a must-run job's admission variable
    host_choice = "host_choice"
    host_allocated = "host_allocated"
    speedup_cut = "speedup_cut"
    deadline = "deadline"
    power_budget = "power_budget"
    fairness = "fairness"  # z <= a job's (team's) normalised speedup: the max-min objective's rows
    fairness_floor = "fairness_floor"  # the second solve keeps every job (team) within the tolerance of the max-min


def constraint_name(family: Family, key: str | None) -> str:
    """`family[key]`, the fleet budget's key None shown as `fleet`."""
    return f"{family.value}[{FLEET if key is None else key}]"
