"""Index sets and coefficients derived from a workload, in one place, before any model is built."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from optsched.schema.workload import DeviceGroup, Job, PowerLevel, Workload

# A host whose serial part alone leaves less than this many hours per work-hour for the parallel part
# cannot meet the deadline in any useful sense; dropping it keeps the matrix free of huge coefficients.
MIN_DEADLINE_SLACK = 1e-9


@dataclass(frozen=True, slots=True)
class Option:
    """Job j may take devices of group g at level l; `speed` already includes the job's speed_on factor."""

    job: int
    group: int
    level: int
    speed: float
    cap_w: float
    idle_w: float
    key: tuple[int, int, int]  # (job, group, level), the index of every per-option variable


def eligible(job: Job, group: DeviceGroup) -> bool:
    """Memory fits (unknown device memory does not) and the model is allowed."""
    if job.memory_gb is not None and (group.memory_gb is None or group.memory_gb < job.memory_gb):
        return False
    return job.allowed_models is None or group.model in job.allowed_models


def undominated_levels(group: DeviceGroup) -> list[int]:
    """Levels not beaten by another level that is at least as fast at no more power."""
    levels = group.power_levels
    keep = []
    for i, a in enumerate(levels):
        dominated = any(
            (b.cap_w <= a.cap_w and b.speed >= a.speed) and (b.cap_w < a.cap_w or b.speed > a.speed or k < i)
            for k, b in enumerate(levels)
            if k != i
        )
        if not dominated:
            keep.append(i)
    return keep


@dataclass(frozen=True)
class ModelData:
    workload: Workload

    @property
    def jobs(self) -> tuple[Job, ...]:
        return self.workload.jobs

    @property
    def groups(self) -> tuple[DeviceGroup, ...]:
        return self.workload.devices

    def level(self, o: Option) -> PowerLevel:
        return self.groups[o.group].power_levels[o.level]

    @cached_property
    def options(self) -> tuple[Option, ...]:
        out = []
        kept = [undominated_levels(g) for g in self.groups]
        for j, job in enumerate(self.jobs):
            for g, group in enumerate(self.groups):
                if not eligible(job, group):
                    continue
                factor = job.speed_on.get(group.model, 1.0)
                for lv in kept[g]:
                    level = group.power_levels[lv]
                    out.append(Option(j, g, lv, level.speed * factor, level.cap_w, group.idle_w, (j, g, lv)))
        return tuple(out)

    @cached_property
    def option_by_key(self) -> dict[tuple[int, int, int], Option]:
        return {o.key: o for o in self.options}

    @cached_property
    def options_of_job(self) -> tuple[tuple[Option, ...], ...]:
        by_job: list[list[Option]] = [[] for _ in self.jobs]
        for o in self.options:
            by_job[o.job].append(o)
        return tuple(tuple(x) for x in by_job)

    @cached_property
    def options_of_group(self) -> tuple[tuple[Option, ...], ...]:
        by_group: list[list[Option]] = [[] for _ in self.groups]
        for o in self.options:
            by_group[o.group].append(o)
        return tuple(tuple(x) for x in by_group)

    @cached_property
    def _eligible_devices(self) -> tuple[int, ...]:
        return tuple(sum(self.groups[g].count for g in {o.group for o in opts}) for opts in self.options_of_job)

    @cached_property
    def _max_devices(self) -> tuple[int, ...]:
        caps = (job.max_devices for job in self.jobs)
        return tuple(n if cap is None else min(cap, n) for n, cap in zip(self._eligible_devices, caps))

    def eligible_devices(self, j: int) -> int:
        return self._eligible_devices[j]

    def max_devices(self, j: int) -> int:
        """Most devices job j can use: its own max_devices and what eligible groups hold."""
        return self._max_devices[j]

    def deadline_coefficient(self, o: Option) -> float | None:
        """Least aggregate speed R that meets the deadline with host option o: p / (D/W - (1-p)/s); None = impossible."""
        job = self.jobs[o.job]
        if job.deadline_hours is None:
            return 0.0
        p = job.parallel_fraction
        if p == 0.0:
            # Serial: runtime W / s_host, so the host alone must be fast enough (equality meets the deadline).
            return 0.0 if o.speed * job.deadline_hours >= job.work_hours * (1 - 1e-12) else None
        slack = job.deadline_hours / job.work_hours - (1.0 - p) / o.speed
        if slack <= MIN_DEADLINE_SLACK * max(1.0, job.deadline_hours / job.work_hours):
            return None
        return p / slack

    def host_options(self, j: int) -> tuple[Option, ...]:
        """Options that may carry job j's serial part (those that can still meet its deadline)."""
        return self._host_options[j]

    @cached_property
    def _host_options(self) -> tuple[tuple[Option, ...], ...]:
        return tuple(
            tuple(o for o in opts if self.deadline_coefficient(o) is not None) for opts in self.options_of_job
        )

    def best_speedup(self, j: int) -> float:
        """Largest S job j can reach: the fastest eligible devices at their fastest level, up to max_devices."""
        return self._best_speedups[j]

    @cached_property
    def _best_speedups(self) -> tuple[float, ...]:
        return tuple(self._best_speedup(j) for j in range(len(self.jobs)))

    def _best_speedup(self, j: int) -> float:
        from optsched.model.amdahl import speedup

        per_group: dict[int, float] = {}
        for o in self.options_of_job[j]:
            per_group[o.group] = max(per_group.get(o.group, 0.0), o.speed)
        speeds = sorted(
            (s for g, s in per_group.items() for _ in range(min(self.groups[g].count, self.max_devices(j)))),
            reverse=True,
        )[: self.max_devices(j)]
        if not speeds or len(speeds) < self.jobs[j].min_devices:
            return 0.0
        return speedup(self.jobs[j].parallel_fraction, speeds[0], sum(speeds))

    @cached_property
    def idle_power_w(self) -> float:
        return sum(g.idle_w * g.count for g in self.groups)

    def idle_power_of_domain(self, domain: str) -> float:
        return sum(g.idle_w * g.count for g in self.groups if g.domain == domain)

    @cached_property
    def peak_power_w(self) -> float:
        return sum(max(lv.cap_w for lv in g.power_levels) * g.count for g in self.groups)
