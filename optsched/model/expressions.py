"""Linear expressions that constraints and objectives share (power drawn, budgets in force)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from optsched.model.builder import Term

if TYPE_CHECKING:
    from optsched.model.data import ModelData


def groups_in(data: ModelData, domain: str | None) -> list[int]:
    return [g for g, group in enumerate(data.groups) if domain is None or group.domain == domain]


def idle_draw(data: ModelData, domain: str | None = None) -> float:
    """Watts every device of the fleet (or of one domain) draws unused."""
    return sum(data.groups[g].idle_w * data.groups[g].count for g in groups_in(data, domain))


def power_terms(data: ModelData, domain: str | None = None) -> tuple[float, list[Term]]:
    """Watts drawn: idle draw of every device (constant) plus (cap - idle) per allocated device, optionally in one
    domain."""
    options = [o for g in groups_in(data, domain) for o in data.options_of_group[g]]
    terms: list[Term] = [("n", o.key, o.cap_w - o.idle_w) for o in options]
    return idle_draw(data, domain), terms


def budgets(data: ModelData) -> list[tuple[str | None, float]]:
    """(domain or None for the fleet, watts) for every budget in the workload."""
    power = data.workload.power
    return ([(None, power.budget_w)] if power.budget_w is not None else []) + sorted(power.domains.items())
