"""Per-queue facts the night planner and the baselines share: device speeds, draws, budgets over time."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from optsched.model.amdahl import speedup
from optsched.model.data import eligible
from optsched.schema.tolerances import TIME_TOL_HOURS
from optsched.schema.night import NightJob, NightQueue



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
    def restart_costs(self) -> tuple[float, ...]:
        return tuple(self.queue.restart_hours(j, self.restart_default) for j in range(len(self.queue.jobs)))

    def restart_hours(self, j: int) -> float:
        """Hours job j holds its devices without progress when it (re)starts from a checkpoint."""
        return self.restart_costs[j]

    def elastic(self, j: int) -> bool:
        return self.queue.elastic(j)

    def checkpoint_hours(self, j: int) -> float:
        return self.queue.checkpoint_hours(j)

    def speed(self, j: int, g: int, level: int) -> float:
        """One device's speed for job j: level speed x speed_on[model] (reference devices)."""
        group = self.queue.devices[g]
        return group.power_levels[level].speed * self.queue.jobs[j].speed_on.get(group.model, 1.0)

    def speedup(self, j: int, uses: Uses) -> float:
        """Heterogeneous Amdahl S = 1 / ((1-p)/s_host + p/R) of job j on these devices."""
        used = [u for u in uses if u.count > 0]
        if not used:
            return 0.0
        s_host = max(self.speed(j, u.group, u.level) for u in used)
        r = sum(u.count * self.speed(j, u.group, u.level) for u in used)
        return speedup(self.queue.jobs[j].parallel_fraction, s_host, r)

    def fastest_level(self, j: int, g: int) -> int:
        """The level of group g at which job j runs fastest (the highest cap among equals)."""
        levels = self.queue.devices[g].power_levels
        return max(range(len(levels)), key=lambda lv: (self.speed(j, g, lv), levels[lv].cap_w, -lv))

    def top_cap_level(self, g: int) -> int:
        """The level with the highest cap (the fastest among equal caps): what the baselines run at."""
        levels = self.queue.devices[g].power_levels
        return max(range(len(levels)), key=lambda lv: (levels[lv].cap_w, levels[lv].speed, -lv))

    def lowest_cap_level(self, g: int) -> int:
        """The level with the lowest cap (the fastest among equal caps)."""
        levels = self.queue.devices[g].power_levels
        return min(range(len(levels)), key=lambda lv: (levels[lv].cap_w, -levels[lv].speed, lv))

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
        """Largest S of job j on its fastest eligible devices (all, or only `free[g]` per group) at the fastest level."""
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
            group = self.queue.devices[u.group]
            if domain is None or group.domain == domain:
                total += u.count * (group.power_levels[u.level].cap_w - group.idle_w)
        return total

    def power(self, running: list[Uses]) -> tuple[float, dict[str, float]]:
        """Fleet draw (W) and draw per domain while these allocations run."""
        total = self.idle_w + sum(self.extra_w(u) for u in running)
        by_domain = {d: self.idle_of_domain(d) + sum(self.extra_w(u, d) for u in running) for d in self.domains}
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
