"""Night-queue baselines: list schedulers producing the same NightPlan as `plan_night`.

- `fifo`: ready jobs in release order (queue order among equals);
- `edf`: ready jobs by earliest deadline (jobs without one last), then release order;
- `easy`: EASY backfilling, what Slurm does by default: ready jobs by priority, then release order; each asks
  for a fixed number of devices (its max_devices, else the most at which Amdahl's parallel efficiency stays
  >= 1/2); the first job that cannot start gets a reservation at the earliest instant, by the running jobs'
  expected ends, when enough of its devices are free and its draw fits the budgets; a later job starts now
  only if it ends before that instant or uses only devices the reservation leaves over.
- `conservative`: conservative backfilling (Mu'alem and Feitelson): EASY's requests and order, but *every* job
  that cannot start gets a reservation, at the earliest instant its request fits beside the running jobs and
  the reservations made before it (held from that instant to its expected end); a job starts now only if it
  delays none of them.

At every event each ready job, in that order, takes the fastest free eligible devices at maximum cap, as
many as it may use (max_devices; EASY: its request) and as fit the budgets; a job that does not fit waits
and the next one is tried. Caps never change, so a job starts only if its draw fits every budget in force
until it ends: the domain budgets now and the global budget (a window's, else budget_w) at every window
start before its end. A job a device failure stops goes back to the queue and restarts from its checkpoint.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from optsched.night.engine import Decision, ProgressCallback, View, simulate
from optsched.night.fleet import Use, Uses, most_that_fit
from optsched.night.milp import night_warnings, validate_night
from optsched.schema.night import NightPlan, NightQueue
from optsched.schema.tolerances import TIME_TOL_HOURS
from optsched.schema.workload import PRIORITY_WEIGHT, Workload

Source = NightQueue | Workload | Mapping[str, Any] | str | Path


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
            restart = view.restart_of(j)
            placed = self._place(view, j, restart, free, uses, ends)
            if placed is None:
                continue
            uses[j], ends[j] = placed
            for u in uses[j]:
                free[u.group] -= u.count
        return Decision(uses)

    def _place(
        self, view: View, j: int, restart: float, free, uses, ends, exactly: int | None = None
    ) -> tuple[Uses, float] | None:
        """The most of the fastest free devices (at maximum cap; `exactly` that many) that fit every budget until
        the job ends."""
        fleet = view.fleet
        job = fleet.jobs[j]
        most = job.max_devices if exactly is None else exactly
        fewest = job.min_devices if exactly is None else exactly
        upper = sum(free[g] for g in fleet.eligible_groups[j])
        if most is not None:
            upper = min(upper, most)
        # Past the most devices whose draw fits now, no k fits (each device of k is one of k + 1's): skip them.
        def fits_now(k: int) -> bool:
            return self._fits(view, _fastest(view, j, free, k), view.t, uses, ends)

        for k in range(most_that_fit(fewest, upper, fits_now), fewest - 1, -1):
            candidate = _fastest(view, j, free, k)
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
        instants = [view.t] + [b for b in fleet.boundaries if view.t + TIME_TOL_HOURS < b < end - TIME_TOL_HOURS]
        for at in instants:
            fleet_budget = fleet.budget_at(at)
            if fleet_budget is None:
                continue
            still = [u for i, u in uses.items() if at == view.t or ends[i] > at + TIME_TOL_HOURS]
            if fleet.power([*still, candidate])[0] > fleet_budget + 1e-9:
                return False
        return True


def _fastest(view: View, j: int, free, k: int) -> Uses:
    """Job j's k fastest devices among `free` (per group), at maximum cap."""
    fleet = view.fleet
    counts: dict[int, int] = {}
    left = k
    for g in fleet.groups_by_top_cap_speed[j]:
        take = min(free[g], left)
        if take > 0:
            counts[g] = take
            left -= take
    return tuple(Use(g, fleet.top_cap_level(g), n) for g, n in sorted(counts.items()))


def request(view: View, j: int) -> int:
    """The devices job j asks for under EASY: max_devices, else the most at which its parallel efficiency
    S(k) / k = 1 / ((1 - p) k + p) stays >= 1/2, i.e. k <= (2 - p) / (1 - p); within min_devices..eligible."""
    fleet = view.fleet
    job = fleet.jobs[j]
    eligible = sum(fleet.queue.devices[g].count for g in fleet.eligible_groups[j])
    if job.max_devices is not None:
        want = job.max_devices
    elif job.parallel_fraction >= 1.0:
        want = eligible
    else:
        want = math.floor((2 - job.parallel_fraction) / (1 - job.parallel_fraction) + 1e-9)
    return max(job.min_devices, min(want, eligible))


class EasyPolicy(ListPolicy):
    """EASY backfilling: one reservation, for the first job in priority order that cannot start."""

    def __init__(self) -> None:
        super().__init__("easy", _priority_order)

    def decide(self, view: View) -> Decision:
        uses: dict[int, Uses] = {r.job: r.uses for r in view.running}
        ends = {r.job: view.finish_at(r) for r in view.running}
        free = list(view.free)
        reservation: tuple[float, list[int]] | None = None  # (shadow time, devices per group the head leaves over)
        for j in sorted(view.ready, key=lambda j: self.order(view, j)):
            want = self._fitting(view, j, request(view, j))
            placed = self._place(view, j, view.restart_of(j), free, uses, ends, exactly=want)
            if placed is None:
                if reservation is None:
                    reservation = self._reserve(view, j, want, free, uses, ends)
                continue
            candidate, end = placed
            if reservation is not None and end > reservation[0] + TIME_TOL_HOURS:
                spare = reservation[1]
                if any(u.count > spare[u.group] for u in candidate):
                    continue  # it would delay the reserved job
                for u in candidate:
                    spare[u.group] -= u.count
            uses[j], ends[j] = candidate, end
            for u in candidate:
                free[u.group] -= u.count
        return Decision(uses)

    @staticmethod
    def _fitting(view: View, j: int, want: int) -> int:
        """At most `want`, as many as alone at maximum cap fit the domain budgets and the highest global budget
        still to come (else min_devices): a request no budget can ever hold would block the queue for good."""
        fleet = view.fleet
        budgets = [fleet.budget_at(view.t), *(b for _, b in fleet.future_budgets(view.t))]
        known = [b for b in budgets if b is not None]
        highest = max(known) if len(known) == len(budgets) else None
        up = list(view.devices_up())
        for k in range(want, fleet.jobs[j].min_devices, -1):
            total, by_domain = fleet.power([_fastest(view, j, up, k)])
            if (highest is None or total <= highest + 1e-9) and all(
                by_domain.get(d, 0.0) <= b + 1e-9 for d, b in fleet.queue.power.domains.items()
            ):
                return k
        return fleet.jobs[j].min_devices

    def _reserve(self, view: View, j: int, want: int, free, uses, ends) -> tuple[float, list[int]] | None:
        """The earliest instant (now or a running job's expected end) at which job j's `want` fastest free devices
        exist and its draw fits the budgets, and the devices per group it leaves over then; None if never."""
        fleet = view.fleet
        instants = sorted({view.t, *(e for e in ends.values() if e > view.t and not math.isinf(e))})
        for at in instants:
            still = {i: u for i, u in uses.items() if ends[i] > at + TIME_TOL_HOURS}
            free_then = list(view.devices_up())
            for us in still.values():
                for u in us:
                    free_then[u.group] -= u.count
            if sum(free_then[g] for g in fleet.eligible_groups[j]) < want:
                continue
            candidate = _fastest(view, j, free_then, want)
            total, by_domain = fleet.power([*still.values(), candidate])
            budget = fleet.budget_at(at)
            if budget is not None and total > budget + 1e-9:
                continue
            if any(by_domain.get(d, 0.0) > b + 1e-9 for d, b in fleet.queue.power.domains.items()):
                continue
            spare = list(free_then)
            for u in candidate:
                spare[u.group] -= u.count
            return at, spare
        return None


class ConservativePolicy(EasyPolicy):
    """Conservative backfilling: a reservation for every job in priority order that cannot start."""

    def __init__(self) -> None:
        ListPolicy.__init__(self, "conservative", _priority_order)

    def decide(self, view: View) -> Decision:
        uses: dict[int, Uses] = {r.job: r.uses for r in view.running}
        ends = {r.job: view.finish_at(r) for r in view.running}
        free = list(view.free)
        # (from, to, devices, devices per group left over at `from`) of each reservation made at this event
        held: list[tuple[float, float, Uses, list[int]]] = []
        profile = _Profile(view, uses, ends)
        for j in sorted(view.ready, key=lambda j: self.order(view, j)):
            want = self._fitting(view, j, request(view, j))
            placed = self._place(view, j, view.restart_of(j), free, uses, ends, exactly=want)
            if placed is not None:
                candidate, end = placed
                late = [r for r in held if end > r[0] + TIME_TOL_HOURS]
                if all(all(u.count <= r[3][u.group] for u in candidate) for r in late):
                    for r in late:
                        for u in candidate:
                            r[3][u.group] -= u.count
                    uses[j], ends[j] = candidate, end
                    profile.add(-math.inf, end, candidate)
                    for u in candidate:
                        free[u.group] -= u.count
                    continue
            reservation = self._reserve_beside(view, j, want, profile)
            if reservation is not None:
                held.append(reservation)
                profile.add(*reservation[:3])
        return Decision(uses)

    @staticmethod
    def _reserve_beside(
        view: View, j: int, want: int, profile: _Profile
    ) -> tuple[float, float, Uses, list[int]] | None:
        """The earliest instant (now, a running job's expected end or a reservation's end) at which job j's `want`
        fastest devices are free of running jobs and of the reservations held then, and its draw fits the
        budgets; with the reservation's end and the devices it leaves over; None if never."""
        fleet = view.fleet
        eligible = fleet.eligible_groups[j]
        domains = fleet.queue.power.domains
        # Consecutive instants often leave job j the same devices: the same candidate and draw.
        drawn: dict[tuple[int, ...], tuple[Uses, float, dict[str, float]]] = {}
        for at, state in profile.states:
            mine, count = state.devices(eligible)
            if count < want:
                continue
            if mine not in drawn:
                candidate = _fastest(view, j, [max(0, f) for f in state.free], want)
                drawn[mine] = (candidate, fleet.extra_w(candidate), {d: fleet.extra_w(candidate, d) for d in domains})
            candidate, extra, extra_by_domain = drawn[mine]
            if state.budget is not None and state.total + extra > state.budget + 1e-9:
                continue
            if any(state.by_domain.get(d, 0.0) + extra_by_domain[d] > b + 1e-9 for d, b in domains.items()):
                continue
            end = at + view.restart_of(j) + view.remaining[j] / fleet.speedup(j, candidate)
            spare = [max(0, f) for f in state.free]
            for u in candidate:
                spare[u.group] -= u.count
            return at, end, candidate, spare
        return None


@dataclass
class _State:
    """What holds just after an instant: devices per group not taken (may go below 0 where reservations
    overlap), the fleet's draw and draw per domain (W, idle included), and the global budget then."""

    free: list[int]
    total: float
    by_domain: dict[str, float]
    budget: float | None
    # Free devices of a set of groups and their sum, kept until the state changes: most jobs ask for the same sets.
    seen: dict[tuple[int, ...], tuple[tuple[int, ...], int]] = field(default_factory=dict)

    def devices(self, groups: tuple[int, ...]) -> tuple[tuple[int, ...], int]:
        """The free devices of these groups (none below 0) and how many in all."""
        found = self.seen.get(groups)
        if found is None:
            mine = tuple(max(0, self.free[g]) for g in groups)
            found = self.seen[groups] = (mine, sum(mine))
        return found


class _Profile:
    """The running jobs' and the reservations' devices and draw at each instant a reservation may start (now,
    and each finite end of a running job or reservation after now), kept up to date as jobs start or reserve:
    conservative backfilling asks it once per instant for every job it reserves, which summing every allocation
    afresh made 95 % of a 120-job night's time (3-7 s; bench/night_queues_third.py)."""

    def __init__(self, view: View, uses: dict[int, Uses], ends: dict[int, float]) -> None:
        self.view = view
        # (from, to, devices): held while from <= t + tol < to; a running job's from is -inf
        self.items: list[tuple[float, float, Uses]] = [(-math.inf, ends[i], us) for i, us in uses.items()]
        # (instant, what holds just after it), by instant
        self.states: list[tuple[float, _State]] = [
            (at, self._state(at)) for at in sorted({view.t, *(to for _, to, _ in self.items if view.t < to < math.inf)})
        ]

    def _state(self, at: float) -> _State:
        fleet = self.view.fleet
        free = list(self.view.devices_up())
        still = [us for begin, to, us in self.items if begin <= at + TIME_TOL_HOURS < to]
        for us in still:
            for u in us:
                free[u.group] -= u.count
        total, by_domain = fleet.power(still)
        return _State(free, total, by_domain, fleet.budget_at(at))

    def add(self, begin: float, to: float, uses: Uses) -> None:
        """Devices taken while begin <= t + tol < to: a job started now (begin -inf) or a reservation."""
        fleet = self.view.fleet
        extra = fleet.extra_w(uses)
        extra_by_domain = {d: fleet.extra_w(uses, d) for d in fleet.domains}
        for at, state in self.states:
            if begin <= at + TIME_TOL_HOURS < to:
                for u in uses:
                    state.free[u.group] -= u.count
                state.total += extra
                state.seen.clear()
                for d, w in extra_by_domain.items():
                    state.by_domain[d] += w
        self.items.append((begin, to, uses))
        k = bisect.bisect_left(self.states, to, key=_instant)
        if self.view.t < to < math.inf and (k == len(self.states) or self.states[k][0] != to):
            self.states.insert(k, (to, self._state(to)))


def _instant(entry: tuple[float, _State]) -> float:
    return entry[0]


def _priority_order(view: View, j: int) -> tuple:
    job = view.fleet.jobs[j]
    return (-PRIORITY_WEIGHT[job.priority], job.release_hours, j)


def _release_order(view: View, j: int) -> tuple:
    return (view.fleet.jobs[j].release_hours, j)


def _deadline_order(view: View, j: int) -> tuple:
    deadline = view.fleet.jobs[j].deadline_hours
    return (deadline is None, math.inf if deadline is None else deadline, view.fleet.jobs[j].release_hours, j)


def _run(policy: ListPolicy, queue: Source, start, hours: float, restart_hours: float, progress) -> NightPlan:
    workload, begin = validate_night(queue, start=start, hours=hours, restart_hours=restart_hours)
    return simulate(
        workload,
        policy,
        start=begin,
        hours=hours,
        restart_hours=restart_hours,
        progress=progress,
        warnings=night_warnings(workload),
    )


def fifo(
    queue: Source,
    *,
    start: datetime | str,
    hours: float,
    restart_hours: float = 0.1,
    progress: ProgressCallback | None = None,
) -> NightPlan:
    """First in, first out: release order, fastest free devices at maximum cap."""
    return _run(ListPolicy("fifo", _release_order), queue, start, hours, restart_hours, progress)


def edf(
    queue: Source,
    *,
    start: datetime | str,
    hours: float,
    restart_hours: float = 0.1,
    progress: ProgressCallback | None = None,
) -> NightPlan:
    """Earliest deadline first, then release order; fastest free devices at maximum cap."""
    return _run(ListPolicy("edf", _deadline_order), queue, start, hours, restart_hours, progress)


def easy(
    queue: Source,
    *,
    start: datetime | str,
    hours: float,
    restart_hours: float = 0.1,
    progress: ProgressCallback | None = None,
) -> NightPlan:
    """EASY backfilling (Slurm's default): priority then release order, one reservation for the blocked head."""
    return _run(EasyPolicy(), queue, start, hours, restart_hours, progress)


def conservative(
    queue: Source,
    *,
    start: datetime | str,
    hours: float,
    restart_hours: float = 0.1,
    progress: ProgressCallback | None = None,
) -> NightPlan:
    """Conservative backfilling: EASY's order and requests, a reservation for every job that cannot start."""
    return _run(ConservativePolicy(), queue, start, hours, restart_hours, progress)


def reference_policies() -> list[ListPolicy]:
    """The four baselines' policies, new ones (EASY and conservative keep their reservations from event to event):
    the planner runs them beside its candidates as the reference it must not fall behind
    (optsched.night.planner.choose)."""
    return [ListPolicy("fifo", _release_order), ListPolicy("edf", _deadline_order), EasyPolicy(), ConservativePolicy()]


NIGHT_BASELINES: dict[str, Callable[..., NightPlan]] = {
    "fifo": fifo,
    "edf": edf,
    "easy": easy,
    "conservative": conservative,
}
