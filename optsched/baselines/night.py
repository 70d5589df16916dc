"""Night-queue baselines: list schedulers producing the same NightPlan as `plan_night`.

- `fifo`: ready jobs in release order (queue order among equals);
- `edf`: ready jobs by earliest deadline (jobs without one last), then release order.

At every event each ready job, in that order, takes the fastest free eligible devices at maximum cap, as
many as it may use (max_devices) and as fit the budgets; a job that does not fit waits and the next one is
tried. Caps never change, so a job starts only if its draw fits every budget in force until it ends:
the domain budgets now and the global budget (a window's, else budget_w) at every window start before its end.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from optsched.night.engine import Decision, ProgressCallback, View, simulate
from optsched.night.fleet import TIME_TOL, Use, Uses
from optsched.night.milp import night_warnings, validate_night
from optsched.schema.night import NightPlan
from optsched.schema.workload import Workload

Source = Workload | Mapping[str, Any] | str | Path


class ListPolicy:
    """Greedy list scheduling in a fixed job order; placement: fastest free devices at maximum cap."""

    def __init__(self, name: str, order: Callable[[View, int], tuple]):
        self.name = name
        self.order = order

    def decide(self, view: View) -> Decision:
        uses: dict[int, Uses] = {r.job: r.uses for r in view.running}
        ends = {r.job: view.finish_at(r) for r in view.running}
        free = list(view.free)
        for j in sorted(view.ready, key=lambda j: self.order(view, j)):
            restart = view.restart_hours if j in view.needs_restart else 0.0
            placed = self._place(view, j, restart, free, uses, ends)
            if placed is None:
                continue
            uses[j], ends[j] = placed
            for u in uses[j]:
                free[u.group] -= u.count
        return Decision(uses)

    def _place(self, view: View, j: int, restart: float, free, uses, ends) -> tuple[Uses, float] | None:
        """The most of the fastest free devices (at maximum cap) that fit every budget until the job ends."""
        fleet = view.fleet
        job = fleet.jobs[j]
        slots = sorted(
            (-fleet.speed(j, g, fleet.top_cap_level(g)), g) for g in fleet.eligible_groups[j] for _ in range(free[g])
        )
        most = len(slots) if job.max_devices is None else min(job.max_devices, len(slots))
        for k in range(most, job.min_devices - 1, -1):
            counts: dict[int, int] = {}
            for _, g in slots[:k]:
                counts[g] = counts.get(g, 0) + 1
            candidate = tuple(Use(g, fleet.top_cap_level(g), n) for g, n in sorted(counts.items()))
            end = view.t + restart + view.remaining[j] / fleet.speedup(j, candidate)
            if self._fits(view, candidate, end, uses, ends):
                return candidate, end
        return None

    @staticmethod
    def _fits(view: View, candidate: Uses, end: float, uses, ends) -> bool:
        fleet = view.fleet
        everyone = [*uses.values(), candidate]
        _, by_domain = fleet.power(everyone)
        for domain, budget in fleet.queue.power.domains.items():
            if by_domain.get(domain, 0.0) > budget + 1e-9:
                return False
        instants = [view.t] + [b for b in fleet.boundaries if view.t + TIME_TOL < b < end - TIME_TOL]
        for at in instants:
            budget = fleet.budget_at(at)
            if budget is None:
                continue
            still = [u for i, u in uses.items() if at == view.t or ends[i] > at + TIME_TOL]
            if fleet.power([*still, candidate])[0] > budget + 1e-9:
                return False
        return True


def _release_order(view: View, j: int) -> tuple:
    return (view.fleet.jobs[j].release_hours, j)


def _deadline_order(view: View, j: int) -> tuple:
    deadline = view.fleet.jobs[j].deadline_hours
    return (deadline is None, math.inf if deadline is None else deadline, view.fleet.jobs[j].release_hours, j)


def _run(policy: ListPolicy, queue: Source, start: datetime | str, hours: float, progress) -> NightPlan:
    workload, begin = validate_night(queue, start=start, hours=hours)
    return simulate(workload, policy, start=begin, hours=hours, progress=progress, warnings=night_warnings(workload))


def fifo(queue: Source, *, start: datetime | str, hours: float, progress: ProgressCallback | None = None) -> NightPlan:
    """First in, first out: release order, fastest free devices at maximum cap."""
    return _run(ListPolicy("fifo", _release_order), queue, start, hours, progress)


def edf(queue: Source, *, start: datetime | str, hours: float, progress: ProgressCallback | None = None) -> NightPlan:
    """Earliest deadline first, then release order; fastest free devices at maximum cap."""
    return _run(ListPolicy("edf", _deadline_order), queue, start, hours, progress)


NIGHT_BASELINES: dict[str, Callable[..., NightPlan]] = {"fifo": fifo, "edf": edf}
