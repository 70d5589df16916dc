"""Per-queue facts the night planner and the baselines share: device speeds, draws, budgets over time."""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from optsched.model.amdahl import speedup
from optsched.model.data import eligible
from optsched.schema.night import NightJob, NightQueue
from optsched.schema.tolerances import TIME_TOL_HOURS


@dataclass(frozen=True, order=True)
class Use:
    """`count` devices of group `group` at power level `level` (indices into the queue's devices/levels)."""

    group: int
    level: int
    count: int


Uses = tuple[Use, ...]


@dataclass(frozen=True)
class Fleet:
    queue: NightQueue
    restart_default: float = 0.0  # hours: the restart cost of jobs whose queue sets none (plan_night's argument)

    @property
    def jobs(self) -> tuple[NightJob, ...]:
        return self.queue.jobs

    @cached_property
    def job_index(self) -> dict[str, int]:
        return {j.id: i for i, j in enumerate(self.queue.jobs)}

    @cached_property
    def eligible_groups(self) -> tuple[tuple[int, ...], ...]:
        return tuple(
            tuple(g for g, group in enumerate(self.queue.devices) if eligible(job, group)) for job in self.queue.jobs
        )

    @cached_property
    def predecessors(self) -> tuple[tuple[int, ...], ...]:
        return tuple(tuple(self.job_index[a] for a in dict.fromkeys(j.after)) for j in self.queue.jobs)

    @cached_property
    def earliest_finishes(self) -> tuple[float, ...]:
        """F_j = max(release_j, max over predecessors i of F_i) + W_j / (best speedup of j), hours (inf for a job
        with no devices): no timeline finishes job j sooner."""
        out = [0.0] * len(self.queue.jobs)
        for j in self.topological_order:
            job, best = self.queue.jobs[j], self.best_speedup(j)
            ready = max([job.release_hours, *(out[i] for i in self.predecessors[j])])
            out[j] = ready + (job.work_hours / best if best > 0 else math.inf)
        return tuple(out)

    @cached_property
    def topological_order(self) -> tuple[int, ...]:
        """Job indices with every job after its predecessors, queue order among the jobs ready together."""
        return self.after_predecessors(tuple(range(len(self.queue.jobs))))

    def after_predecessors(self, order: tuple[int, ...]) -> tuple[int, ...]:
        """`order` with each job moved after its predecessors: in turn, the first job of `order` whose predecessors
        are all placed (the schema refuses cycles in `after`)."""
        position = {j: k for k, j in enumerate(order)}
        waiting = [len(p) for p in self.predecessors]
        successors: list[list[int]] = [[] for _ in self.predecessors]
        for j, preds in enumerate(self.predecessors):
            for i in preds:
                successors[i].append(j)
        ready = [(position[j], j) for j in order if not waiting[j]]
        heapq.heapify(ready)
        out = []
        while ready:
            _, j = heapq.heappop(ready)
            out.append(j)
            for k in successors[j]:
                waiting[k] -= 1
                if not waiting[k] and k in position:
                    heapq.heappush(ready, (position[k], k))
        return tuple(out)

    @cached_property
    def restart_costs(self) -> tuple[float, ...]:
        return tuple(self.queue.restart_hours(j, self.restart_default) for j in range(len(self.queue.jobs)))

    def restart_hours(self, j: int) -> float:
        """Hours job j holds its devices without progress when it (re)starts from a checkpoint."""
        return self.restart_costs[j]

    def elastic(self, j: int) -> bool:
        return self.queue.elastic(j)

    def checkpoint_hours(self, j: int) -> float:
        return self.queue.checkpoint_hours(j)

    @cached_property
    def effective_deadlines(self) -> tuple[float | None, ...]:
        """Each job's deadline, tightened backwards along `after`: it must end in time for every job after it to
        run alone at its best speed by that job's effective deadline (hours; None without any)."""
        return self._tightened([job.deadline_hours for job in self.queue.jobs])

    @cached_property
    def hard_deadlines(self) -> tuple[float | None, ...]:
        """The effective deadlines that the hard jobs' deadlines alone set (hours; None for a job no hard deadline
        waits on): a normal prep job before a critical job due at 3 h gets one, since its wait is the critical
        job's miss."""
        return self._tightened([job.deadline_hours if job.is_hard else None for job in self.queue.jobs])

    def _tightened(self, own: list[float | None]) -> tuple[float | None, ...]:
        """`own` deadlines propagated backwards along `after`: d_j = min(own_j, min over successors s of
        d_s - work_s / best speedup_s)."""
        successors: list[list[int]] = [[] for _ in self.queue.jobs]
        for j, preds in enumerate(self.predecessors):
            for p in preds:
                successors[p].append(j)
        out: list[float | None] = [None] * len(self.queue.jobs)
        done = [False] * len(self.queue.jobs)
        order: list[int] = []
        stack = [(j, False) for j in range(len(self.queue.jobs))]
        while stack:  # successors before predecessors (post-order on the successor graph)
            j, expanded = stack.pop()
            if done[j]:
                continue
            if expanded:
                done[j] = True
                order.append(j)
                continue
            stack.append((j, True))
            stack.extend((s, False) for s in successors[j] if not done[s])
        for j in order:
            mine, bounds = own[j], []
            if mine is not None:
                bounds.append(mine)
            for s in successors[j]:
                best, theirs = self.best_speedup(s), out[s]
                if theirs is not None and best > 0:
                    bounds.append(theirs - self.queue.jobs[s].work_hours / best)
            out[j] = min(bounds) if bounds else None
        return tuple(out)

    def effective_deadline(self, j: int) -> float | None:
        return self.effective_deadlines[j]

    def hard_deadline(self, j: int) -> float | None:
        return self.hard_deadlines[j]

    @cached_property
    def _speeds(self) -> tuple[tuple[tuple[float, ...], ...], ...]:
        """[job][group][level] -> one device's speed (computed once: the policies ask for it at every event)."""
        return tuple(
            tuple(
                tuple(lv.speed * job.speed_on.get(group.model, 1.0) for lv in group.power_levels)
                for group in self.queue.devices
            )
            for job in self.queue.jobs
        )

    @cached_property
    def _fastest_levels(self) -> tuple[tuple[int, ...], ...]:
        out = []
        for j in range(len(self.queue.jobs)):
            row = []
            for g, group in enumerate(self.queue.devices):
                levels = group.power_levels
                row.append(max(range(len(levels)), key=lambda lv: (self._speeds[j][g][lv], levels[lv].cap_w, -lv)))
            out.append(tuple(row))
        return tuple(out)

    @cached_property
    def _extra(self) -> tuple[tuple[float, ...], ...]:
        """[group][level] -> W one busy device draws above idle."""
        return tuple(tuple(lv.cap_w - g.idle_w for lv in g.power_levels) for g in self.queue.devices)

    @cached_property
    def _best_speedups(self) -> tuple[float, ...]:
        return tuple(self._best_speedup(j, None) for j in range(len(self.queue.jobs)))

    @cached_property
    def groups_by_speed(self) -> tuple[tuple[int, ...], ...]:
        """Each job's eligible groups, fastest (at their fastest level) first."""
        return tuple(
            tuple(sorted(self.eligible_groups[j], key=lambda g: (-self._speeds[j][g][self._fastest_levels[j][g]], g)))
            for j in range(len(self.queue.jobs))
        )

    @cached_property
    def groups_by_top_cap_speed(self) -> tuple[tuple[int, ...], ...]:
        """Each job's eligible groups, fastest at their highest cap first (the list schedulers' order)."""
        return tuple(
            tuple(sorted(self.eligible_groups[j], key=lambda g: (-self.speed(j, g, self.top_cap_level(g)), g)))
            for j in range(len(self.queue.jobs))
        )

    def speed(self, j: int, g: int, level: int) -> float:
        """One device's speed for job j: level speed x speed_on[model] (reference devices)."""
        return self._speeds[j][g][level]

    def speedup(self, j: int, uses: Uses) -> float:
        """Heterogeneous Amdahl S = 1 / ((1-p)/s_host + p/R) of job j on these devices."""
        # A plain loop: the dispatch asks this hundreds of thousands of times a night.
        speeds, s_host, r, used = self._speeds[j], 0.0, 0.0, False
        for u in uses:
            if u.count > 0:
                s = speeds[u.group][u.level]
                s_host, r, used = max(s_host, s) if used else s, r + u.count * s, True
        return speedup(self.queue.jobs[j].parallel_fraction, s_host, r) if used else 0.0

    def fastest_level(self, j: int, g: int) -> int:
        """The level of group g at which job j runs fastest (the highest cap among equals)."""
        return self._fastest_levels[j][g]

    def top_cap_level(self, g: int) -> int:
        """The level with the highest cap (the fastest among equal caps): what the baselines run at."""
        return self.levels_by_cap[g][0]

    def level_by_rank(self, g: int, rank: int) -> int:
        """Group g's level with the `rank`-th highest cap (0: the highest; the fastest first among equal caps; the
        lowest cap for any rank past the last)."""
        order = self.levels_by_cap[g]
        return order[min(rank, len(order) - 1)]

    @cached_property
    def levels_by_cap(self) -> tuple[tuple[int, ...], ...]:
        """Per group, its levels by cap, highest first (the fastest first among equal caps, then the first listed).
        Cached: the dispatch and the list schedulers ask for them at every allocation they try (on a 120-job night,
        over a million times)."""
        out = []
        for group in self.queue.devices:
            levels = group.power_levels
            out.append(tuple(sorted(range(len(levels)), key=lambda lv: (-levels[lv].cap_w, -levels[lv].speed, lv))))
        return tuple(out)

    def lowest_cap_level(self, g: int) -> int:
        """The level with the lowest cap (the fastest among equal caps)."""
        levels = self.queue.devices[g].power_levels
        return min(range(len(levels)), key=lambda lv: (levels[lv].cap_w, -levels[lv].speed, lv))

    def next_lower_cap_level(self, g: int, level: int) -> int | None:
        """The level with the next lower cap below `level`'s (the fastest among equal caps), None at the lowest."""
        levels = self.queue.devices[g].power_levels
        below = [lv for lv in range(len(levels)) if levels[lv].cap_w < levels[level].cap_w]
        return max(below, key=lambda lv: (levels[lv].cap_w, levels[lv].speed, -lv)) if below else None

    def lowest_cap_w(self, g: int) -> float:
        return min(lv.cap_w for lv in self.queue.devices[g].power_levels)

    def slowest_level(self, j: int, g: int) -> int:
        return min(range(len(self.queue.devices[g].power_levels)), key=lambda lv: (self.speed(j, g, lv), lv))

    def slowest_speed(self, j: int, g: int) -> float:
        return self.speed(j, g, self.slowest_level(j, g))

    def max_devices(self, j: int) -> int:
        job = self.queue.jobs[j]
        available = sum(self.queue.devices[g].count for g in self.eligible_groups[j])
        return available if job.max_devices is None else min(job.max_devices, available)

    def best_speedup(self, j: int, free: tuple[int, ...] | None = None) -> float:
        """Largest S of job j on its fastest eligible devices (all, or only `free[g]` per group) at the fastest
        level."""
        return self._best_speedups[j] if free is None else self._best_speedup(j, free)

    def _best_speedup(self, j: int, free: tuple[int, ...] | None) -> float:
        speeds = sorted(
            (
                self.speed(j, g, self.fastest_level(j, g))
                for g in self.eligible_groups[j]
                for _ in range(min(self.queue.devices[g].count if free is None else free[g], self.max_devices(j)))
            ),
            reverse=True,
        )[: self.max_devices(j)]
        if not speeds or len(speeds) < self.queue.jobs[j].min_devices:
            return 0.0
        return speedup(self.queue.jobs[j].parallel_fraction, speeds[0], sum(speeds))

    def slowest_speedup(self, j: int) -> float:
        """Least S of any allocation job j may get: min_devices devices at the slowest eligible speed."""
        slowest = min((self.slowest_speed(j, g) for g in self.eligible_groups[j]), default=0.0)
        k = self.queue.jobs[j].min_devices
        return speedup(self.queue.jobs[j].parallel_fraction, slowest, k * slowest)

    # Power ---------------------------------------------------------------------------------

    @cached_property
    def idle_w(self) -> float:
        return sum(g.idle_w * g.count for g in self.queue.devices)

    @cached_property
    def domains(self) -> tuple[str, ...]:
        named = {g.domain for g in self.queue.devices if g.domain is not None}
        return tuple(sorted(named | set(self.queue.power.domains)))

    def idle_of_domain(self, domain: str) -> float:
        return sum(g.idle_w * g.count for g in self.queue.devices if g.domain == domain)

    def extra_w(self, uses: Uses, domain: str | None = None) -> float:
        """Watts these devices draw above idle: count x (cap - idle_w), optionally only in one domain."""
        total = 0.0
        for u in uses:
            if domain is None or self.queue.devices[u.group].domain == domain:
                total += u.count * self._extra[u.group][u.level]
        return total

    @cached_property
    def _idle_by_domain(self) -> dict[str, float]:
        return {d: self.idle_of_domain(d) for d in self.domains}

    def power(self, running: list[Uses]) -> tuple[float, dict[str, float]]:
        """Fleet draw (W) and draw per domain while these allocations run."""
        total = self.idle_w
        by_domain = dict(self._idle_by_domain)
        groups = self.queue.devices
        for uses in running:
            for u in uses:
                extra = u.count * self._extra[u.group][u.level]
                total += extra
                domain = groups[u.group].domain
                if domain is not None:
                    by_domain[domain] += extra
        return total, by_domain

    def budget_at(self, t: float) -> float | None:
        return self.queue.power.budget_at(t + TIME_TOL_HOURS)

    @cached_property
    def boundaries(self) -> tuple[float, ...]:
        """Instants (hours) at which the global budget may change: every window's start and end."""
        return tuple(sorted({x for w in self.queue.power.windows for x in (w.from_hours, w.to_hours)}))

    def future_budgets(self, t: float) -> list[tuple[float, float]]:
        """(from_hours, budget_w) of each budget period that starts after t and has a global budget."""
        out = []
        for b in self.boundaries:
            if b > t + TIME_TOL_HOURS:
                budget = self.budget_at(b)
                if budget is not None:
                    out.append((b, budget))
        return out

    def window_change(self, t: float) -> str | None:
        starts = any(abs(w.from_hours - t) <= TIME_TOL_HOURS for w in self.queue.power.windows)
        ends = any(abs(w.to_hours - t) <= TIME_TOL_HOURS for w in self.queue.power.windows)
        return "change" if starts and ends else "start" if starts else "end" if ends else None


def most_that_fit(fewest: int, most: int, fits: Callable[[int], bool]) -> int:
    """The largest k in fewest..most with fits(k), fewest - 1 if none, for a `fits` that holds for every k below
    one that does (bisection: log2(most - fewest) calls)."""
    low, high = fewest - 1, most
    while low < high:
        mid = (low + high + 1) // 2
        if fits(mid):
            low = mid
        else:
            high = mid - 1
    return low
