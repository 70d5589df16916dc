"""Primal heuristics: greedy placement and LP rounding with repair. The planner warm-starts the MILP from them;
the placement baselines (optsched.baselines) are built on the same pieces."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from optsched.model.amdahl import speedup
from optsched.model.data import ModelData, Option
from optsched.model.expressions import budgets, groups_in
from optsched.schema.tolerances import DEADLINE_RTOL
from optsched.solve.extract import Counts


@dataclass
class FreeCapacity:
    """Free devices and power headroom while a heuristic places jobs one device at a time."""

    data: ModelData
    free: list[int] = field(init=False)
    headroom: dict[str | None, float] = field(init=False)
    scopes_of_group: list[list[str | None]] = field(init=False)

    def __post_init__(self):
        self.free = [g.count for g in self.data.groups]
        self.headroom = {}
        self.scopes_of_group = [[] for _ in self.data.groups]
        for domain, limit in budgets(self.data):
            idle = sum(self.data.groups[g].idle_w * self.data.groups[g].count for g in groups_in(self.data, domain))
            self.headroom[domain] = limit - idle
            for g in groups_in(self.data, domain):
                self.scopes_of_group[g].append(domain)

    def fits(self, o: Option, n: int = 1) -> bool:
        extra = n * (o.cap_w - o.idle_w)
        return self.free[o.group] >= n and all(self.headroom[s] >= extra - 1e-9 for s in self.scopes_of_group[o.group])

    def take(self, o: Option, n: int = 1) -> None:
        self.free[o.group] -= n
        for s in self.scopes_of_group[o.group]:
            self.headroom[s] -= n * (o.cap_w - o.idle_w)

    def give_back(self, o: Option, n: int = 1) -> None:
        self.take(o, -n)

    @property
    def within_budgets(self) -> bool:
        return all(h >= -1e-6 for h in self.headroom.values())


def job_speedup(data: ModelData, j: int, counts: Counts) -> float:
    used = [o for o in data.options_of_job[j] if counts.get(o.key, 0) > 0]
    if not used:
        return 0.0
    return speedup(
        data.jobs[j].parallel_fraction, max(o.speed for o in used), sum(o.speed * counts[o.key] for o in used)
    )


def job_satisfied(data: ModelData, j: int, counts: Counts) -> bool:
    """Admitted with enough devices and, if it has a deadline, meeting it."""
    job = data.jobs[j]
    n = sum(counts.get(o.key, 0) for o in data.options_of_job[j])
    if n < job.min_devices or n > data.max_devices(j):
        return False
    if job.deadline_hours is None:
        return True
    s = job_speedup(data, j, counts)
    return s > 0 and job.work_hours / s <= job.deadline_hours * (1 + DEADLINE_RTOL)


def job_order(data: ModelData) -> list[int]:
    """Priority (critical first), then earliest deadline, then id: the order the greedy rules serve jobs in."""
    rank = {"critical": 0, "high": 1, "normal": 2, "low": 3}
    return sorted(
        range(len(data.jobs)),
        key=lambda j: (rank[data.jobs[j].priority.value], data.jobs[j].deadline_hours or math.inf, data.jobs[j].id),
    )


def _fastest_first(data: ModelData, j: int, max_cap_only: bool) -> list[list[Option]]:
    """Per group, the job's options from the highest cap down; groups ordered by their fastest speed for the job."""
    per_group: dict[int, list[Option]] = {}
    for o in data.options_of_job[j]:
        per_group.setdefault(o.group, []).append(o)
    ladders = [sorted(opts, key=lambda o: -o.cap_w) for opts in per_group.values()]
    if max_cap_only:
        ladders = [ladder[:1] for ladder in ladders]
    return sorted(ladders, key=lambda ladder: (-ladder[0].speed, ladder[0].group))


def _place_greedily(
    data: ModelData, j: int, fleet: FreeCapacity, counts: Counts, lower_caps: bool, minimal: bool = False,
    start: Counts | None = None,
) -> bool:
    """Add the fastest device that fits, one at a time, to `start` (devices the job already holds in `fleet`, not
    in `counts`), until the job meets its deadline (or, `minimal`, is satisfied at all), reaches max_devices, or
    nothing fits; keep the devices only if the job is satisfied (else every one goes back). True if kept."""
    job = data.jobs[j]
    taken: Counts = dict(start or {})
    ladders = _fastest_first(data, j, max_cap_only=not lower_caps)
    total = sum(taken.values())
    while total < data.max_devices(j):
        done = minimal or job.deadline_hours is not None
        if done and total >= job.min_devices and job_satisfied(data, j, taken):
            break
        choice = next((o for ladder in ladders for o in ladder if fleet.fits(o)), None)
        if choice is None:
            break
        fleet.take(choice)
        taken[choice.key] = taken.get(choice.key, 0) + 1
        total += 1
    if job_satisfied(data, j, taken):
        counts.update(taken)
        return True
    for key, n in taken.items():
        fleet.give_back(data.option_by_key[key], n)
    return False


def greedy_counts(data: ModelData, lower_caps: bool = False) -> Counts:
    fleet = FreeCapacity(data)
    counts: Counts = {}
    if not fleet.within_budgets:
        return counts
    for j in job_order(data):
        _place_greedily(data, j, fleet, counts, lower_caps)
    return counts


def round_and_repair(data: ModelData, fractional: dict[tuple[int, int, int], float]) -> Counts:
    """Round an LP allocation: every job keeps the floor of its LP devices, then the largest fractions are rounded
    up while they fit (each job up to its rounded LP total); jobs left unsatisfied are dropped (must-run ones
    re-placed greedily), and leftover devices and watts are spread greedily. Feasible by construction."""
    fleet = FreeCapacity(data)
    counts: Counts = {}
    if not fleet.within_budgets:
        return counts
    _round_tier(data, fractional, fleet, counts, list(range(len(data.jobs))), least=0)
    for j in job_order(data):
        mine = {o.key: counts[o.key] for o in data.options_of_job[j] if counts.get(o.key)}
        if not mine or job_satisfied(data, j, mine):
            continue
        for key, n in mine.items():
            fleet.give_back(data.option_by_key[key], n)
            del counts[key]
    for j in job_order(data):
        if j in data.must_run and not any(counts.get(o.key) for o in data.options_of_job[j]):
            _place_greedily(data, j, fleet, counts, lower_caps=True, minimal=True)
    if not data.admit_all:
        fill_greedily(data, fleet, counts)
    return counts


def round_must_run_first(data: ModelData, fractional: dict[tuple[int, int, int], float]) -> Counts:
    """Round an LP allocation in two tiers, must-run jobs first (so that the others' rounding cannot take the
    devices and watts they need): in each, every job keeps the floor of its LP devices, the largest fractions are
    rounded up while they fit (each job up to its rounded LP total, at least one device); a job left unsatisfied
    is completed with the fastest devices that fit, or dropped (a must-run one re-placed greedily, taking devices
    from must-run jobs that stay satisfied without them if it must). Leftover devices and watts are spread
    greedily. Feasible by construction, like `round_and_repair`."""
    fleet = FreeCapacity(data)
    counts: Counts = {}
    if not fleet.within_budgets:
        return counts
    must = data.must_run_set
    order = job_order(data)
    for tier in ([j for j in order if j in must], [j for j in order if j not in must]):
        _round_tier(data, fractional, fleet, counts, tier)
        for j in tier:
            mine = {o.key: counts.pop(o.key) for o in data.options_of_job[j] if counts.get(o.key)}
            if mine and job_satisfied(data, j, mine):
                counts.update(mine)
            elif mine and _place_greedily(data, j, fleet, counts, lower_caps=True, minimal=True, start=mine):
                continue
            elif j in must and not _place_greedily(data, j, fleet, counts, lower_caps=True, minimal=True):
                _place_by_taking(data, j, fleet, counts, tier)
    if not data.admit_all:
        fill_greedily(data, fleet, counts)
    return counts


def _place_by_taking(data: ModelData, j: int, fleet: FreeCapacity, counts: Counts, donors: list[int]) -> bool:
    """Free, one at a time, devices of the groups job j may use from `donors` that stay satisfied without them
    (the donor with most devices first), until j can be placed greedily; at most max_devices(j) x 4 devices."""
    groups = {o.group for o in data.options_of_job[j]}
    for _ in range(4 * max(1, data.max_devices(j))):
        best = None
        for k in donors:
            if k == j:
                continue
            held = [(key, n) for key in (o.key for o in data.options_of_job[k]) if (n := counts.get(key, 0)) > 0]
            for key, n in held:
                if key[1] not in groups:
                    continue
                less = dict(held)
                less[key] = n - 1
                if job_satisfied(data, k, {x: m for x, m in less.items() if m}):
                    size = sum(m for _, m in held)
                    if best is None or size > best[0]:
                        best = (size, key)
        if best is None:
            return False
        key = best[1]
        counts[key] -= 1
        if not counts[key]:
            del counts[key]
        fleet.give_back(data.option_by_key[key])
        if _place_greedily(data, j, fleet, counts, lower_caps=True, minimal=True):
            return True
    return False


def _round_tier(data: ModelData, fractional: dict[tuple[int, int, int], float], fleet: FreeCapacity, counts: Counts,
                jobs: list[int], least: int = 1) -> None:
    """Floors of the LP devices of `jobs`, then their largest fractions rounded up while they fit, each job up to
    its rounded LP total (at least `least` devices)."""
    options = [o for j in jobs for o in data.options_of_job[j]]
    mass = {j: 0.0 for j in jobs}
    devices = {j: 0 for j in jobs}
    for o in options:
        v = fractional.get(o.key, 0.0)
        mass[o.job] += v
        n = math.floor(v + 1e-6)
        if n and fleet.fits(o, n):
            fleet.take(o, n)
            counts[o.key] = n
            devices[o.job] += n
    fractions = sorted(
        ((fractional.get(o.key, 0.0) - math.floor(fractional.get(o.key, 0.0) + 1e-6), o) for o in options),
        key=lambda x: (-x[0], -x[1].speed, x[1].key),
    )
    for frac, o in fractions:
        if frac <= 1e-6:
            break
        want = min(max(least, round(mass[o.job])), data.max_devices(o.job))
        if devices[o.job] < want and fleet.fits(o):
            fleet.take(o)
            counts[o.key] = counts.get(o.key, 0) + 1
            devices[o.job] += 1


def greedy_fill(data: ModelData) -> Counts:
    """Must-run jobs first with the least that satisfies them, then devices and watts by speedup gained per watt."""
    fleet = FreeCapacity(data)
    counts: Counts = {}
    if not fleet.within_budgets:
        return counts
    for j in job_order(data):
        if j in data.must_run:
            _place_greedily(data, j, fleet, counts, lower_caps=True, minimal=True)
    if not data.admit_all:
        fill_greedily(data, fleet, counts)
    return counts


def fill_greedily(data: ModelData, fleet: FreeCapacity, counts: Counts) -> None:
    """Spend leftover devices and watts where the weighted speedup gained per watt is largest (lazy greedy:
    a job's gains only change when it gets a device, and an option that no longer fits never fits again)."""
    import heapq

    state = {j: _JobState.of(data, j, counts) for j in range(len(data.jobs))}
    version = [0] * len(data.jobs)
    heap: list = []

    def push(o: Option) -> None:
        st = state[o.job]
        gain = st.gain(o)
        if gain > 1e-12:
            heapq.heappush(heap, (-gain / max(o.cap_w - o.idle_w, 1e-3), o.key, version[o.job], o))

    for o in data.options:
        if fleet.fits(o):
            push(o)
    while heap:
        _, key, seen, o = heapq.heappop(heap)
        if not fleet.fits(o):
            continue
        if seen != version[o.job]:
            push(o)
            continue
        fleet.take(o)
        counts[key] = counts.get(key, 0) + 1
        state[o.job].add(o)
        version[o.job] += 1
        for other in data.options_of_job[o.job]:
            if fleet.fits(other):
                push(other)


@dataclass
class _JobState:
    """What fill_greedily needs of one job: its devices, host speed and aggregate speed, updated per device."""

    data: ModelData
    j: int
    devices: int
    s_host: float
    r: float

    @classmethod
    def of(cls, data: ModelData, j: int, counts: Counts) -> _JobState:
        used = [o for o in data.options_of_job[j] if counts.get(o.key, 0) > 0]
        return cls(
            data, j, sum(counts[o.key] for o in used), max((o.speed for o in used), default=0.0),
            sum(o.speed * counts[o.key] for o in used),
        )

    def speedup(self, s_host: float, r: float) -> float:
        return speedup(self.data.jobs[self.j].parallel_fraction, s_host, r)

    def gain(self, o: Option) -> float:
        """Weighted speedup gained by one more device of option o; 0 if the job would not be satisfied."""
        job = self.data.jobs[self.j]
        n = self.devices + 1
        if n < job.min_devices or n > self.data.max_devices(self.j):
            return 0.0
        s_host, r = max(self.s_host, o.speed), self.r + o.speed
        after = self.speedup(s_host, r)
        if job.deadline_hours is not None and job.work_hours / after > job.deadline_hours * (1 + DEADLINE_RTOL):
            return 0.0
        return job.objective_weight * (after - self.speedup(self.s_host, self.r))

    def add(self, o: Option) -> None:
        self.devices += 1
        self.s_host = max(self.s_host, o.speed)
        self.r += o.speed
