"""A first plan in seconds at any size: a deadline- and budget-aware constructive heuristic.

1. Must-run jobs, tightest deadline first (the speedup their deadline needs over the best they can reach), each
   get the allocation that meets min_devices and the deadline at the least extra power: the cheaper of two
   candidate orders (watts per unit of speed, then fastest first), each cut at the shortest prefix that
   satisfies the job, taking only devices that fit in capacity and in every budget.
2. Leftover devices and watts go, by lazy greedy, to the move with the most weighted speedup per extra watt:
   admitting a job with its cheapest satisfying allocation, or one more device for a job already admitted.

It never builds the option tuple (ModelData.options): each job works on its own kept (group, level) entries, in
plain Python loops that stop at the first prefix that satisfies it, so a job costs tens of microseconds whatever
the fleet. Every allocation it returns is feasible by construction (capacity, budgets, min/max devices,
deadlines); the planner still checks it before using it.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from optsched.model.data import Arrays, ModelData
from optsched.model.expressions import budgets
from optsched.schema.tolerances import DEADLINE_RTOL
from optsched.solve.extract import Counts

# Candidate entries per job the fill phase prices for one more device (best watts per speed first).
FILL_OPTIONS = 6
# Aim this far inside a deadline so that rounding in the speed sums can never push a plan past it.
DEADLINE_MARGIN = 1e-9


class _Fleet:
    """Free devices per group and watts of headroom per budget scope (fleet and domains)."""

    def __init__(self, data: ModelData, least_extra_of_group: np.ndarray):
        a = data.arrays
        self.free: list[int] = a.count.tolist()
        self.headroom: list[float] = []
        self.scopes: list[list[int]] = [[] for _ in data.groups]
        scopes = budgets(data)
        self.member = np.zeros((len(data.groups), len(scopes)), dtype=bool)
        for b, (domain, limit) in enumerate(scopes):
            inside = [g for g, group in enumerate(data.groups) if domain is None or group.domain == domain]
            self.headroom.append(limit - sum(float(a.idle[g] * a.count[g]) for g in inside))
            self.member[inside, b] = True
            for g in inside:
                self.scopes[g].append(b)
        self.everywhere = [b for b, (domain, _) in enumerate(scopes) if domain is None]
        self.least_extra_of_group = least_extra_of_group
        self.dead: list[bool] = []
        self._update_dead()

    def _update_dead(self) -> None:
        """Groups none of whose devices fit any more, at any level: out of devices, or a budget short of the
        cheapest level's extra watts. _prefix skips them without pricing."""
        free = np.array(self.free)
        if self.member.shape[1]:
            head = np.where(self.member, np.array(self.headroom)[None, :], np.inf).min(axis=1)
        else:
            head = np.full(len(free), np.inf)
        dead = (free <= 0) | (self.least_extra_of_group > head + 1e-9)
        self.dead = dead.tolist()
        self.all_dead = bool(dead.all())

    @property
    def within_budgets(self) -> bool:
        return all(h >= -1e-6 for h in self.headroom)

    def room(self, g: int, extra: float, drawn: dict[int, float] | None = None) -> int:
        """Devices of group g at `extra` W each that fit in capacity and every budget (less what `drawn` holds)."""
        n = self.free[g]
        if extra > 1e-12:
            for b in self.scopes[g]:
                head = self.headroom[b] - (drawn.get(b, 0.0) if drawn else 0.0)
                n = min(n, max(0, math.floor((head + 1e-9) / extra)))
        return n

    def exhausted(self, least_extra: float) -> bool:
        """No device at `least_extra` W or more fits any more under a budget every group draws from."""
        return least_extra > 1e-12 and any(self.headroom[b] + 1e-9 < least_extra for b in self.everywhere)

    def give_back(self, g: int, n: int, extra: float) -> None:
        self.take(g, -n, extra)

    def take(self, g: int, n: int, extra: float) -> None:
        self.free[g] -= n
        for b in self.scopes[g]:
            self.headroom[b] -= n * extra
        self._update_dead()


class _Candidates:
    """For every job, its eligible groups in two orders, each group at one level (its levels share its devices):
    least watts per unit of speed first (at the group's most efficient level), and fastest first (at its top
    level). Within a group, the speed_on factor scales every level alike, so both levels are the same for all
    jobs and only the order of the groups differs per job; the orders come from two vectorised argsorts."""

    def __init__(self, a: Arrays, price: np.ndarray | None = None):
        extra = a.level_cap - a.idle[a.level_group]
        # What a device at each kept level costs the plan: its extra watts, or prices (per device and per watt,
        # from the Lagrangian bound) that also count what scarce devices and tight budgets are worth.
        price = np.maximum(extra, 1e-9) if price is None else np.maximum(price, 1e-9 * np.maximum(extra, 1.0))
        per_speed = price / a.level_speed
        groups = len(a.count)
        self.extra = extra
        self.efficient = np.zeros(groups, dtype=np.int64)
        self.fastest = np.zeros(groups, dtype=np.int64)
        for g in range(groups):
            ks = np.flatnonzero(a.level_group == g)
            self.efficient[g] = ks[np.lexsort((-a.level_speed[ks], per_speed[ks]))[0]]
            self.fastest[g] = ks[np.lexsort((per_speed[ks], -a.level_speed[ks]))[0]]
        with np.errstate(divide="ignore"):
            eff = np.where(a.eligible, per_speed[self.efficient] / a.factor, np.inf)
        fast = np.where(a.eligible, a.factor * a.level_speed[self.fastest], -np.inf)
        self.eligible_groups = a.eligible.sum(axis=1)
        self.by_efficiency = np.argsort(eff, axis=1, kind="stable")
        self.by_speed = np.argsort(-fast, axis=1, kind="stable")
        self.least_w_per_speed = eff.min(axis=1) if groups else np.full(len(a.p), np.inf)
        both = np.minimum(extra[self.efficient], extra[self.fastest])
        self.least_extra_of_group = np.array([extra[a.level_group == g].min() for g in range(groups)])
        self.least_extra = (
            np.where(a.eligible, both[None, :], np.inf).min(axis=1) if groups else np.full(len(a.p), np.inf)
        )
        self.level_group: list[int] = a.level_group.tolist()
        self.level_speed: list[float] = a.level_speed.tolist()
        self.level_extra: list[float] = extra.tolist()
        self.level_price: list[float] = price.tolist()


class _Speeds:
    """Job j's speed at kept level k: its speed_on factor for the group times the level's speed."""

    __slots__ = ("factor", "group", "speed")

    def __init__(self, factor: list[float], c: _Candidates):
        self.factor, self.group, self.speed = factor, c.level_group, c.level_speed

    def __getitem__(self, k: int) -> float:
        return self.factor[self.group[k]] * self.speed[k]


class _Job:
    """One job's candidate entries (kept-level indices k, in the two orders) and the devices it holds."""

    __slots__ = ("orders", "group", "speed", "extra", "price", "held", "least_extra")

    def __init__(self, a: Arrays, j: int, c: _Candidates):
        m = int(c.eligible_groups[j])
        self.orders: list[list[int]] = [
            c.efficient[c.by_efficiency[j, :m]].tolist(), c.fastest[c.by_speed[j, :m]].tolist()
        ]
        self.group = c.level_group
        self.speed = _Speeds(a.factor[j].tolist(), c)
        self.extra = c.level_extra
        self.price = c.level_price
        self.held: dict[int, int] = {}
        self.least_extra = float(c.least_extra[j])

    @property
    def devices(self) -> int:
        return sum(self.held.values())


def _speedup(p: float, s_host: float, r: float) -> float:
    if s_host <= 0 or r <= 0:
        return 0.0
    return 1.0 / ((1.0 - p) / s_host + p / r)


class _Rules:
    """Job j's numbers as plain floats: what its allocations must satisfy."""

    __slots__ = ("p", "work", "deadline", "min_devices", "max_devices", "weight")

    def __init__(self, a: Arrays, j: int):
        self.p = float(a.p[j])
        self.work = float(a.work[j])
        self.deadline = float(a.deadline[j])
        self.min_devices = int(a.min_devices[j])
        self.max_devices = int(a.max_devices[j])
        self.weight = float(a.weight[j])

    def needed_r(self, host: float) -> float:
        """Least aggregate speed that meets the deadline with this host: p / (D/W - (1-p)/s); inf if none."""
        if not math.isfinite(self.deadline):
            return 0.0
        if self.p == 0.0:
            return 0.0 if host * self.deadline >= self.work * (1 + DEADLINE_MARGIN) else math.inf
        slack = self.deadline / self.work - (1.0 - self.p) / host
        return self.p / slack * (1 + DEADLINE_MARGIN) if slack > 1e-12 else math.inf

    def satisfied(self, host: float, r: float, n: int) -> bool:
        """min/max devices and the deadline, recomputed as the verifier does."""
        if n < self.min_devices or n > self.max_devices or n == 0:
            return False
        if not math.isfinite(self.deadline):
            return True
        s = _speedup(self.p, host, r)
        return s > 0 and self.work / s <= self.deadline * (1 + DEADLINE_RTOL)


def _prefix(rules: _Rules, job: _Job, fleet: _Fleet, order: list[int]) -> tuple[dict[int, int], float] | None:
    """Devices per entry for the shortest prefix of `order` that satisfies the job, taking at each entry only what
    fits beside the earlier entries; and its cost (extra watts, or prices). None when the order runs out first."""
    if fleet.exhausted(job.least_extra):
        return None
    taken: dict[int, int] = {}
    drawn: dict[int, float] = {}
    n = 0
    r = host = watts = 0.0
    dead = fleet.dead
    for e in order:
        g = job.group[e]
        if dead[g]:
            continue
        speed, extra = job.speed[e], job.extra[e]
        room = min(fleet.room(g, extra, drawn), rules.max_devices - n)
        if room <= 0:
            continue
        new_host = max(host, speed)
        need = rules.needed_r(new_host)
        if need != math.inf:
            m = max(math.ceil(max(need - r, 0.0) / speed - 1e-12), rules.min_devices - n, 1)
            if m <= room:
                taken[e] = m
                watts += m * job.price[e]
                if rules.satisfied(new_host, r + m * speed, n + m):
                    return taken, watts
                return None
        taken[e] = room
        n += room
        r += room * speed
        host = new_host
        watts += room * job.price[e]
        for b in fleet.scopes[g]:
            drawn[b] = drawn.get(b, 0.0) + room * extra
    return None


def cheapest_allocation(rules: _Rules, job: _Job, fleet: _Fleet) -> tuple[dict[int, int], float] | None:
    """Devices per entry that satisfy the job at the least extra power over the candidate orders; None if none fits."""
    best = None
    for order in job.orders:
        found = _prefix(rules, job, fleet, order)
        if found is not None and (best is None or found[1] < best[1]):
            best = found
    return best


def best_value_allocation(rules: _Rules, job: _Job, fleet: _Fleet) -> tuple[dict[int, int], float] | None:
    """With prices: the devices of one group (among the job's leading candidates) that satisfy the job with the
    most weighted speedup minus their price; (devices per entry, net value), or None if none fits."""
    best = None
    for e in dict.fromkeys(job.orders[0][:FILL_OPTIONS] + job.orders[1][:FILL_OPTIONS]):
        g = job.group[e]
        if fleet.dead[g]:
            continue
        s, price = job.speed[e], job.price[e]
        need = rules.needed_r(s)
        if need == math.inf:
            continue
        lo = max(rules.min_devices, math.ceil(need / s - 1e-12), 1)
        hi = min(fleet.room(g, job.extra[e]), rules.max_devices)
        if lo > hi:
            continue
        p, w = rules.p, rules.weight
        if p >= 1.0:
            candidates = {lo, hi}
        else:
            root = (math.sqrt(w * s * p / max(price, 1e-12)) - p) / (1.0 - p) if p > 0 else lo
            candidates = {lo, hi, min(hi, max(lo, math.floor(root))), min(hi, max(lo, math.ceil(root)))}
        for m in candidates:
            net = w * _speedup(p, s, m * s) - m * price
            if (best is None or net > best[1]) and rules.satisfied(s, m * s, m):
                best = ({e: m}, net)
    return best


def tightness_order(a: Arrays, best: np.ndarray) -> list[int]:
    """Jobs whose deadline needs the largest share of their best speedup first; then by priority weight."""
    with np.errstate(divide="ignore", invalid="ignore"):
        tight = np.where(np.isfinite(a.deadline) & (best > 0), (a.work / a.deadline) / best, 0.0)
    return np.lexsort((np.arange(len(tight)), -a.weight, -tight)).tolist()


def construct(data: ModelData, price: np.ndarray | None = None, start: Counts | None = None) -> Counts:
    """A feasible plan, or empty counts when the must-run jobs cannot all be placed (see the module docstring).

    `price` (per kept level, optsched.solve.columns.ColumnMaster.level_prices) replaces extra watts as the cost ordering
    candidates and fill moves; `start` (a feasible plan) is kept and only added to."""
    a = data.arrays
    candidates = _Candidates(a, price)
    fleet = _Fleet(data, candidates.least_extra_of_group)
    if not fleet.within_budgets:
        return {}
    jobs: dict[int, _Job] = {}
    rules: dict[int, _Rules] = {}

    def job(j: int) -> _Job:
        if j not in jobs:
            jobs[j], rules[j] = _Job(a, j, candidates), _Rules(a, j)
        return jobs[j]

    if start:
        kept = _level_of(a)
        for (j, g, lv), n in start.items():
            if n > 0:
                _hold(job(j), fleet, {kept[(g, lv)]: n})
    best = np.array(data._best_speedups) if len(a.p) else np.zeros(0)
    for j in tightness_order(a, best):
        if not a.must[j] or (j in jobs and jobs[j].held):
            continue
        found = best_value_allocation(_Rules(a, j), job(j), fleet) if price is not None else None
        if found is None:
            found = cheapest_allocation(_Rules(a, j), job(j), fleet)
        if found is None:
            return {}
        _hold(job(j), fleet, found[0])
    if not data.admit_all:
        _fill(a, job, rules, jobs, fleet, candidates.least_w_per_speed, priced=price is not None, best=best)
    counts: Counts = {}
    for j, holder in jobs.items():
        for k, n in holder.held.items():
            counts[(j, int(a.level_group[k]), int(a.level_index[k]))] = n
    return counts


def _hold(job: _Job, fleet: _Fleet, taken: dict[int, int]) -> None:
    for e, n in taken.items():
        fleet.take(job.group[e], n, job.extra[e])
        job.held[e] = job.held.get(e, 0) + n


def _state(job: _Job) -> tuple[int, float, float]:
    n = 0
    r = host = 0.0
    for e, m in job.held.items():
        n += m
        r += m * job.speed[e]
        host = max(host, job.speed[e])
    return n, float(host), float(r)


def _fill(
    a: Arrays, job, rules: dict, jobs: dict, fleet: _Fleet, least_w_per_speed: np.ndarray, *, priced: bool = False,
    best: np.ndarray | None = None,
) -> None:
    """Lazy greedy on weighted speedup per extra watt: admissions (cheapest satisfying allocation) and +1 devices.
    With prices, on net value instead (weighted speedup minus the price of the devices): admissions take the
    single-group allocation of most net value, and only moves that gain are made. A heap entry's key is an upper
    bound on its value; the true one is computed only when it reaches the top."""
    heap: list[tuple[float, int, int, int]] = []  # (-density bound, job, entry or -1 for admission, version)
    version: dict[int, int] = {}
    priced_mode = priced

    def push_increments(j: int) -> None:
        holder, rule = jobs[j], rules[j]
        n, host, r = _state(holder)
        if n >= rule.max_devices:
            return
        now = _speedup(rule.p, host, r)
        priced = []
        for e in set(holder.orders[0][:FILL_OPTIONS]) | set(holder.orders[1][:FILL_OPTIONS]):
            if fleet.room(holder.group[e], holder.extra[e]) < 1:
                continue
            speed = holder.speed[e]
            gain = rule.weight * (_speedup(rule.p, max(host, speed), r + speed) - now)
            key = gain - holder.price[e] if priced_mode else gain / max(holder.price[e], 1e-9)
            if gain > 1e-12 and key > 0:
                priced.append((-key, j, e, version.get(j, 0)))
        for item in priced:
            heapq.heappush(heap, item)

    for j in range(len(a.p)):
        if j in jobs and jobs[j].held:
            push_increments(j)
        elif a.eligible[j].any() and a.max_devices[j] >= a.min_devices[j]:
            # w / (least watts per speed) bounds the density of any allocation: S <= R and watts >= R x that least;
            # w x best speedup bounds its net value.
            bound = a.weight[j] * best[j] if priced and best is not None else a.weight[j] / least_w_per_speed[j]
            heapq.heappush(heap, (-float(bound), j, -1, 0))
    while heap and not fleet.all_dead:
        key, j, e, seen = heapq.heappop(heap)
        if seen != version.get(j, 0):
            continue
        holder, rule = job(j), rules[j]
        if e < 0:
            if holder.held:
                continue
            found = best_value_allocation(rule, holder, fleet) if priced else cheapest_allocation(rule, holder, fleet)
            if found is None or (priced and found[1] <= 0):
                continue
            taken, watts = found
            host = max(holder.speed[x] for x in taken)
            r = sum(holder.speed[x] * m for x, m in taken.items())
            density = watts if priced else rule.weight * _speedup(rule.p, host, r) / max(watts, 1e-9)
            if heap and -heap[0][0] > density * (1 + 1e-9):
                heapq.heappush(heap, (-density, j, -1, seen))
                continue
            _hold(holder, fleet, taken)
        else:
            if _state(holder)[0] >= rule.max_devices or fleet.room(holder.group[e], holder.extra[e]) < 1:
                version[j] = seen + 1
                push_increments(j)
                continue
            _hold(holder, fleet, {e: 1})
        version[j] = seen + 1
        push_increments(j)


def improve(data: ModelData, counts: Counts, price: np.ndarray | None = None, passes: int = 2) -> Counts:
    """Re-place one job at a time (heaviest first): release its devices and take the single-group allocation of
    most net value (weighted speedup minus price) if it beats what the job had; then spend what is left by the
    unpriced fill. Without `price`, a watt costs the plan's average weighted speedup per extra watt. Feasible in,
    feasible out: every job stays satisfied and must-run jobs stay admitted."""
    a = data.arrays
    if not counts:
        return counts
    if price is None:
        extra = a.level_cap - a.idle[a.level_group]
        level_of = _level_of(a)
        drawn = sum(n * float(extra[level_of[(g, lv)]]) for (_, g, lv), n in counts.items())
        value = _weighted(a, counts)
        price = extra * (value / max(drawn, 1e-9))
    candidates = _Candidates(a, price)
    fleet = _Fleet(data, candidates.least_extra_of_group)
    jobs: dict[int, _Job] = {}
    level_of = _level_of(a)
    for (j, g, lv), n in counts.items():
        if n > 0:
            if j not in jobs:
                jobs[j] = _Job(a, j, candidates)
            _hold(jobs[j], fleet, {level_of[(g, lv)]: n})
    order = sorted(jobs, key=lambda j: -float(a.weight[j]) * float(data._best_speedups[j]))
    for _ in range(passes):
        changed = False
        for j in order:
            holder, rule = jobs[j], _Rules(a, j)
            old = dict(holder.held)
            n, host, r = _state(holder)
            old_net = rule.weight * _speedup(rule.p, host, r) - sum(holder.price[e] * m for e, m in old.items())
            for e, m in old.items():
                fleet.give_back(holder.group[e], m, holder.extra[e])
            holder.held = {}
            found = best_value_allocation(rule, holder, fleet)
            if found is not None and found[1] > old_net + 1e-9 * abs(old_net) + 1e-12:
                _hold(holder, fleet, found[0])
                changed = True
            else:
                _hold(holder, fleet, old)
        if not changed:
            break
    result: Counts = {}
    for j, holder in jobs.items():
        for k, n in holder.held.items():
            result[(j, int(a.level_group[k]), int(a.level_index[k]))] = n
    return construct(data, start=result) if not data.admit_all else result


def _level_of(a: Arrays) -> dict[tuple[int, int], int]:
    return {(int(g), int(lv)): k for k, (g, lv) in enumerate(zip(a.level_group, a.level_index, strict=True))}


def _weighted(a: Arrays, counts: Counts) -> float:
    per_job: dict[int, list[tuple[float, int]]] = {}
    level_of = _level_of(a)
    for (j, g, lv), n in counts.items():
        per_job.setdefault(j, []).append((float(a.factor[j, g] * a.level_speed[level_of[(g, lv)]]), n))
    return sum(
        float(a.weight[j]) * _speedup(float(a.p[j]), max(s for s, _ in used), sum(s * n for s, n in used))
        for j, used in per_job.items()
    )
