"""Index sets and coefficients derived from a workload, in one place, before any model is built."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from optsched.model.objectives import OBJECTIVES
from optsched.schema.workload import DeviceGroup, Job, PowerLevel, Workload

# A host whose serial part alone leaves less than this many hours per work-hour for the parallel part
# cannot meet the deadline in any useful sense; dropping it keeps the matrix free of huge coefficients.
MIN_DEADLINE_SLACK = 1e-9


class Option(NamedTuple):
    """Job j may take devices of group g at level l; `speed` already includes the job's speed_on factor.
    (A named tuple: a workload has up to millions of options, and tuples are the cheapest immutable records.)"""

    job: int
    group: int
    level: int
    speed: float
    cap_w: float
    idle_w: float
    key: tuple[int, int, int]  # (job, group, level), the index of every per-option variable


class OptionArrays(NamedTuple):
    """Every option as arrays, in `ModelData.options` order (N options, H = host.sum() host variables)."""

    job: np.ndarray  # [N] job index
    group: np.ndarray  # [N] group index
    speed: np.ndarray  # [N] one device's speed, the job's factor included
    draw: np.ndarray  # [N] W above idle per device (cap - idle)
    deadline_coefficient: np.ndarray  # [N] least R with this host (0 where none or not a host)
    host: np.ndarray  # [N] bool: a host variable h exists (p < 1 and the host can meet the deadline)
    hosts: np.ndarray  # [H] the option of each h variable, in the order of the h block


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


@dataclass(frozen=True, eq=False)
class Arrays:
    """The workload as NumPy arrays (J jobs, G groups, K kept (group, level) pairs), for vectorised work at scale."""

    p: np.ndarray  # [J] parallel fraction
    work: np.ndarray  # [J] hours on one reference device
    deadline: np.ndarray  # [J] hours, inf when none
    min_devices: np.ndarray  # [J]
    max_devices: np.ndarray  # [J] min(own max_devices, eligible devices)
    weight: np.ndarray  # [J] objective weight (priority weight x weight)
    must: np.ndarray  # [J] bool: every plan admits the job
    count: np.ndarray  # [G] devices
    idle: np.ndarray  # [G] W per unused device
    eligible: np.ndarray  # [J, G] bool
    factor: np.ndarray  # [J, G] speed_on multiplier
    level_group: np.ndarray  # [K] group of each kept level, groups in order
    level_index: np.ndarray  # [K] index into the group's power_levels
    level_speed: np.ndarray  # [K] level speed (before the job's factor)
    level_cap: np.ndarray  # [K] W
    top_speed: np.ndarray  # [G] fastest kept level speed

    def speeds(self, jobs: np.ndarray | slice = slice(None)) -> NDArray[np.float64]:
        """[J', K] speed of each kept level for each job (0 where not eligible)."""
        levels = self.level_group
        speeds: NDArray[np.float64] = self.factor[jobs][:, levels] * self.level_speed * self.eligible[jobs][:, levels]
        return speeds


def workload_arrays(workload: Workload, must: tuple[int, ...]) -> Arrays:
    jobs, groups = workload.jobs, workload.devices
    models = sorted({g.model for g in groups})
    model_of = np.array([models.index(g.model) for g in groups], dtype=np.int64)
    index = {m: i for i, m in enumerate(models)}
    factor_m = np.ones((len(jobs), len(models)))
    allowed_m = np.ones((len(jobs), len(models)), dtype=bool)
    for j, job in enumerate(jobs):
        for model, f in job.speed_on.items():
            if model in index:
                factor_m[j, index[model]] = f
        if job.allowed_models is not None:
            allowed_m[j] = False
            for model in job.allowed_models:
                if model in index:
                    allowed_m[j, index[model]] = True
    need = np.array([np.nan if job.memory_gb is None else job.memory_gb for job in jobs])
    have = np.array([np.nan if g.memory_gb is None else g.memory_gb for g in groups])
    with np.errstate(invalid="ignore"):
        memory_ok = np.isnan(need)[:, None] | (have[None, :] >= need[:, None])
    eligible = allowed_m[:, model_of] & memory_ok
    count = np.array([g.count for g in groups], dtype=np.int64)
    own_max = np.array([np.iinfo(np.int64).max if job.max_devices is None else job.max_devices for job in jobs])
    eligible_devices = eligible.astype(np.int64) @ count if len(groups) else np.zeros(len(jobs), dtype=np.int64)
    kept = [(g, lv) for g, group in enumerate(groups) for lv in undominated_levels(group)]
    level_group = np.array([g for g, _ in kept], dtype=np.int64)
    level_index = np.array([lv for _, lv in kept], dtype=np.int64)
    level_speed = np.array([groups[g].power_levels[lv].speed for g, lv in kept])
    must_mask = np.zeros(len(jobs), dtype=bool)
    must_mask[list(must)] = True
    return Arrays(
        p=np.array([job.parallel_fraction for job in jobs]),
        work=np.array([job.work_hours for job in jobs]),
        deadline=np.array([np.inf if job.deadline_hours is None else job.deadline_hours for job in jobs]),
        min_devices=np.array([job.min_devices for job in jobs], dtype=np.int64),
        max_devices=np.minimum(own_max, eligible_devices),
        weight=np.array([job.objective_weight for job in jobs]),
        must=must_mask,
        count=count,
        idle=np.array([g.idle_w for g in groups]),
        eligible=eligible,
        factor=factor_m[:, model_of],
        level_group=level_group,
        level_index=level_index,
        level_speed=level_speed,
        level_cap=np.array([groups[g].power_levels[lv].cap_w for g, lv in kept]),
        top_speed=np.array([max(g.power_levels[lv].speed for lv in undominated_levels(g)) for g in groups]),
    )


@dataclass(frozen=True)
class ModelData:
    """The workload's index sets and coefficients. The fairness objectives also take `solo`, each job's best
    speedup alone on the fleet (optsched.solve.fairness computes it), and, for their second solve, `fairness_floor`,
    the fairness value every plan must keep."""

    workload: Workload
    solo: tuple[float, ...] = ()
    fairness_floor: float | None = None

    @property
    def jobs(self) -> tuple[Job, ...]:
        return self.workload.jobs

    @cached_property
    def admit_all(self) -> bool:
        """The objective admits every job (and so every deadline binds)."""
        return OBJECTIVES[self.workload.objective].admit_all

    @cached_property
    def must_run(self) -> tuple[int, ...]:
        """Indices of the jobs every plan must admit: the hard priorities, or all jobs when the objective admits all."""
        return tuple(j for j, job in enumerate(self.jobs) if job.is_hard or self.admit_all)

    @cached_property
    def must_run_set(self) -> frozenset[int]:
        return frozenset(self.must_run)

    @cached_property
    def arrays(self) -> Arrays:
        return workload_arrays(self.workload, self.must_run)

    def has_options(self, j: int) -> bool:
        """Job j has at least one eligible device group (without building the options)."""
        return bool(self.arrays.eligible[j].any())

    def option(self, key: tuple[int, int, int]) -> Option:
        """The option of `key` = (job, group, level), built on the fly (the options tuple need not exist)."""
        j, g, lv = key
        group, job = self.groups[g], self.jobs[j]
        level = group.power_levels[lv]
        return Option(j, g, lv, level.speed * job.speed_on.get(group.model, 1.0), level.cap_w, group.idle_w, key)

    @property
    def groups(self) -> tuple[DeviceGroup, ...]:
        return self.workload.devices

    def level(self, o: Option) -> PowerLevel:
        return self.groups[o.group].power_levels[o.level]

    @cached_property
    def options(self) -> tuple[Option, ...]:
        """Every (job, eligible group, undominated level), job by job, groups and levels in workload order."""
        a = self.arrays
        jobs, kept = np.nonzero(a.eligible[:, a.level_group])
        groups, levels = a.level_group[kept], a.level_index[kept]
        speeds = a.factor[jobs, groups] * a.level_speed[kept]
        caps, idles = a.level_cap[kept], a.idle[groups]
        return tuple(
            Option(j, g, lv, s, c, i, (j, g, lv))
            for j, g, lv, s, c, i in zip(
                jobs.tolist(),
                groups.tolist(),
                levels.tolist(),
                speeds.tolist(),
                caps.tolist(),
                idles.tolist(),
                strict=False,
            )
        )

    @cached_property
    def option_arrays(self) -> OptionArrays:
        """`options` as NumPy arrays, in the same order (for the families that write their rows as arrays)."""
        opts = self.options
        n = len(opts)
        job = np.fromiter((o.job for o in opts), dtype=np.int64, count=n)
        group = np.fromiter((o.group for o in opts), dtype=np.int64, count=n)
        speed = np.fromiter((o.speed for o in opts), dtype=np.float64, count=n)
        draw = np.fromiter((o.cap_w - o.idle_w for o in opts), dtype=np.float64, count=n)
        coefficient = deadline_coefficients(self.arrays, job, speed)
        host = ~np.isnan(coefficient) & (self.arrays.p[job] < 1.0)
        return OptionArrays(job, group, speed, draw, np.where(host, coefficient, 0.0), host, np.flatnonzero(host))

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
        a = self.arrays
        return tuple((a.eligible.astype(np.int64) @ a.count).tolist()) if len(a.count) else (0,) * len(self.jobs)

    @cached_property
    def _max_devices(self) -> tuple[int, ...]:
        return tuple(self.arrays.max_devices.tolist())

    def eligible_devices(self, j: int) -> int:
        return self._eligible_devices[j]

    def max_devices(self, j: int) -> int:
        """Most devices job j can use: its own max_devices and what eligible groups hold."""
        return self._max_devices[j]

    def deadline_coefficient(self, o: Option) -> float | None:
        """Least aggregate speed R that meets the deadline with host option o: p / (D/W - (1-p)/s); None =
        impossible."""
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
        return tuple(best_speedups(self.arrays).tolist())

    @cached_property
    def normalisers(self) -> tuple[float, ...]:
        """S_j^solo per job: `solo`, or without it the speedup on the fastest eligible devices ignoring budgets
        (an upper bound of S_j^solo, for callers that build a model without solving the solo problems)."""
        return self.solo if self.solo else self._best_speedups

    @cached_property
    def idle_power_w(self) -> float:
        return sum(g.idle_w * g.count for g in self.groups)

    def idle_power_of_domain(self, domain: str) -> float:
        return sum(g.idle_w * g.count for g in self.groups if g.domain == domain)

    @cached_property
    def peak_power_w(self) -> float:
        return sum(max(lv.cap_w for lv in g.power_levels) * g.count for g in self.groups)


def deadline_coefficients(a: Arrays, job: np.ndarray, speed: np.ndarray) -> np.ndarray:
    """`ModelData.deadline_coefficient` for options given as (job, speed) arrays, NaN where it is None (the same
    float operations in the same order, so the same values)."""
    p, work, deadline = a.p[job], a.work[job], a.deadline[job]
    out = np.zeros(len(job))
    # An extreme deadline over a tiny work overflows to inf: no deadline row binds, which is what it means.
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = deadline / work
        slack = ratio - (1.0 - p) / speed
        parallel = p / slack
    timed = np.isfinite(deadline)
    serial = timed & (p == 0.0)
    out[serial & ~(speed * deadline >= work * (1 - 1e-12))] = np.nan
    rest = timed & (p != 0.0)
    too_tight = slack <= MIN_DEADLINE_SLACK * np.maximum(1.0, ratio)
    out[rest] = np.where(too_tight[rest], np.nan, parallel[rest])
    return out


def best_speedups(a: Arrays) -> np.ndarray:
    """[J] the speedup on the fastest eligible devices at their fastest level, up to max_devices (0 if fewer than
    min_devices are eligible): per job, groups sorted by speed, each filled up to what is left of max_devices."""
    jobs, groups = a.eligible.shape
    if not jobs or not groups:
        return np.zeros(jobs)
    speed = np.where(a.eligible, a.factor * a.top_speed, 0.0)
    order = np.argsort(-speed, axis=1, kind="stable")
    fastest = np.take_along_axis(speed, order, axis=1)
    counts = np.where(fastest > 0, a.count[order], 0)
    before = np.cumsum(counts, axis=1) - counts
    take = np.clip(a.max_devices[:, None] - before, 0, counts)
    r = (take * fastest).sum(axis=1)
    host = fastest[:, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        s = 1.0 / ((1.0 - a.p) / host + a.p / r)
    ok = (host > 0) & (r > 0) & (a.eligible.astype(np.int64) @ a.count >= a.min_devices)
    return np.where(ok, s, 0.0)
