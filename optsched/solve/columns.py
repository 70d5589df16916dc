"""Column generation (Dantzig-Wolfe) for weighted_speedup at scale: a master over whole job allocations.

Only the device capacities (G rows) and the budgets (B rows) couple the jobs; everything else (admission,
min/max devices, the serial host, the deadline, the Amdahl speedup) belongs to one job. A *column* is one job's
complete integer allocation, valued at its exact weighted speedup w_j S_j; the master picks at most one column
per job (exactly one for a must-run job):

    max sum_c v_c x_c  s.t.  sum_{c of j} x_c <= 1 (= 1 if j must run),
                             sum_c devices_gc x_c <= count_g (devices),
                             sum_c extra_bc x_c <= budget_b - idle draw in b (W),   x_c in {0, 1}.

Its LP has J + G + B rows whatever the number of options, so HiGHS solves it in a blink at 20,000 jobs. Pricing
uses its duals (mu_g per device, lambda_b per watt, sigma_j per job): for every job, every host level k and a
few extra levels l (k's own, and those cheapest per unit of speed at these prices), every count m of extra
devices is valued exactly, and the best allocation with a positive reduced profit
w S - pi_k - m pi_l - sigma_j joins the master. The duals also give a proven bound at no extra cost: the
Lagrangian D(mu, lambda) of optsched.solve.bound (a closed-form upper bound per job over *every* allocation),
valid for any prices. When pricing finds nothing, the columns' integer master (price-and-branch) is solved by
HiGHS, warm-started from the best plan; with a few dozen coupling rows against thousands of jobs, the LP
leaves at most G + B jobs fractional, so that MILP is close to its LP.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import highspy
import numpy as np

from optsched.model.data import ModelData
from optsched.schema.tolerances import DEADLINE_RTOL
from optsched.solve.bound import NU_SHARES, Relaxation
from optsched.solve.construct import improve
from optsched.solve.extract import Counts
from optsched.solve.highs import Outcome, new_highs, run_highs

log = logging.getLogger(__name__)

# Jobs priced per vectorised block (bounds the memory of the job x host x extra x count arrays).
PRICE_BLOCK = 128
# Extra levels tried besides the frontier: the cheapest per unit of speed at the current prices.
EXTRA_LEVELS = 3
# The closed-form bound's device-count multipliers while pricing (optsched.solve.bound: any give a valid bound;
# one is four times cheaper than its default four).
FILTER_SHARES = (0.0,)
# Jobs in the sample whose master prices the seed columns, and the share of column generation's time it may take.
SAMPLE_JOBS = 500
SAMPLE_SHARE = 0.2
# Weight of the sample's prices in the prices the rounds price at (the LP's duals have the rest).
SMOOTHING = 0.5
# Hosts per job the spread families try (those the single-level family rates best).
SPREAD_HOSTS = 4
# Share of the time that column generation may take before the integer master.
COLUMNS_SHARE = 0.65
# Share of the time left after it that refining the bound may take.
REFINE_SHARE = 0.2
# Share of the time left after it that the integer master over the columns near the LP may take.
RESTRICTED_SHARE = 0.6
# Columns within this share of their value from a zero reduced profit join the restricted integer master.
NEAR_LP_SHARE = 0.01
# The least relative gap asked of the integer master.
MIN_MASTER_GAP = 1e-4
# Jobs whose closed-form bound exceeds what the master pays them by more than this share of their weight get
# the tighter (and costlier) per-job bound.
REFINE_TOL = 1e-4
# A reduced profit below this (relative to the job's weight) is no improvement.
REDUCED_TOL = 1e-7
# Deadlines are priced with this margin inside the verifier's tolerance (a column must stay valid exactly).
DEADLINE_MARGIN = 1e-9

Consider = Callable[[Counts], None]
Column = tuple[tuple[tuple[int, int], int], ...]  # ((kept level, devices), ...) of one job


class ColumnMaster:
    """The restricted master in HiGHS, grown column by column; rows: jobs, then groups, then budgets.

    `members` (default: every job) and `scale` make a sample's master: only those jobs, capacities and budget
    headroom times `scale`, no job required (a sample's must-run jobs may not fit its share); its duals
    approximate the whole master's (see `sample_prices`)."""

    def __init__(self, data: ModelData, members: np.ndarray | None = None, scale: float = 1.0):
        self.data = data
        a = data.arrays
        self.a = a
        self.relax = Relaxation(data)
        self.extra = self.relax.extra  # [K] W above idle per device at each kept level
        self.member = self.relax.member  # [G, B]
        self.headroom = self.relax.headroom  # [B]
        self.jobs, self.groups, self.budget_rows = len(a.p), len(a.count), len(self.headroom)
        self.members = np.arange(self.jobs) if members is None else np.sort(members)
        self.row = np.full(self.jobs, -1, dtype=np.int64)
        self.row[self.members] = np.arange(len(self.members))
        self.column_job: list[int] = []
        self.columns: list[Column] = []
        self.values: list[float] = []
        self.broken = False  # HiGHS ignored an interrupt and still runs: this master solves nothing more
        self.index: dict[tuple[int, Column], int] = {}  # (job, column) -> its position in the master
        self.lp_x = np.zeros(0)  # the last LP solution, one value per column
        self.lp_reduced = np.zeros(0)  # and the columns' reduced profits there (<= 0 at an optimum)
        self.h = new_highs()
        h, inf = self.h, highspy.kHighsInf
        h.setOptionValue("presolve", "off")
        must = a.must[self.members].astype(np.float64) if members is None else np.zeros(len(self.members))
        lower = np.concatenate((must, np.full(self.groups + self.budget_rows, -inf)))
        upper = np.concatenate((np.ones(len(self.members)), scale * a.count.astype(np.float64), scale * self.headroom))
        h.addRows(len(lower), lower, upper, 0, np.zeros(1, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0))
        h.changeObjectiveSense(highspy.ObjSense.kMaximize)

    # -- columns ---------------------------------------------------------------------------------------------

    def value_of(self, j: int, column: Column) -> float:
        """w_j S_j of job j holding `column` (the host is its fastest device)."""
        a = self.a
        speeds = [a.factor[j, a.level_group[k]] * a.level_speed[k] for k, _ in column]
        r = sum(s * n for s, (_, n) in zip(speeds, column))
        host = max(speeds)
        p = a.p[j]
        return float(a.weight[j] / ((1.0 - p) / host + p / r))

    def add(self, new: list[tuple[int, Column]]) -> int:
        """Add the columns not already in the master; returns how many were new."""
        fresh = list(dict.fromkeys((j, c) for j, c in new if (j, c) not in self.index and self.row[j] >= 0))
        if not fresh:
            return 0
        starts, index, coef, cost = [], [], [], []
        G, base_budget = len(self.members), len(self.members) + self.groups
        for j, column in fresh:
            self.index[(j, column)] = len(self.columns)
            devices = np.zeros(self.groups)
            watts = np.zeros(self.budget_rows)
            for k, n in column:
                g = self.a.level_group[k]
                devices[g] += n
                watts += n * self.extra[k] * self.member[g]
            starts.append(len(index))
            rows = [int(self.row[j])] + [G + g for g in np.flatnonzero(devices)] + [base_budget + b for b in np.flatnonzero(watts)]
            vals = [1.0] + devices[devices != 0].tolist() + watts[watts != 0].tolist()
            index.extend(rows)
            coef.extend(vals)
            value = self.value_of(j, column)
            cost.append(value)
            self.column_job.append(j)
            self.columns.append(column)
            self.values.append(value)
        n = len(fresh)
        self.h.addCols(
            n, np.array(cost), np.zeros(n), np.ones(n), len(index), np.array(starts, dtype=np.int32),
            np.array(index, dtype=np.int32), np.array(coef, dtype=np.float64),
        )
        return n

    def add_counts(self, counts: Counts) -> int:
        """Every placed job's allocation in `counts` as a column (a plan's columns keep it reachable)."""
        return self.add(self._columns_in(counts))

    def _columns_in(self, counts: Counts) -> list[tuple[int, Column]]:
        """Each placed job of `counts` with its allocation as a column."""
        per_job: dict[int, list[tuple[int, int]]] = {}
        for (j, g, lv), n in counts.items():
            if n > 0:
                per_job.setdefault(j, []).append((self.level_of[(g, lv)], n))
        return [(j, tuple(sorted(c))) for j, c in per_job.items()]

    @cached_property
    def level_of(self) -> dict[tuple[int, int], int]:
        """(group, level index) -> kept level."""
        return {(int(g), int(lv)): k for k, (g, lv) in enumerate(zip(self.a.level_group, self.a.level_index))}

    def counts(self, x: np.ndarray) -> Counts:
        """The allocation of the columns chosen in an integer solution x."""
        out: Counts = {}
        a = self.a
        for c in np.flatnonzero(x > 0.5):
            j = self.column_job[c]
            for k, n in self.columns[c]:
                key = (j, int(a.level_group[k]), int(a.level_index[k]))
                out[key] = out.get(key, 0) + n
        return out

    # -- LP --------------------------------------------------------------------------------------------------

    def solve_lp(self, deadline: float) -> tuple[float, np.ndarray, np.ndarray, np.ndarray] | None:
        """(LP value, sigma [J], mu [G], lambda [B]) at the master's LP optimum, or None if not solved in time."""
        if self.broken:
            return None
        result = run_highs(self.h, wall_deadline=deadline, mip_gap=0.0, relax=True, integer_columns=np.zeros(0, dtype=np.int32))
        self.broken = result.abandoned
        if result.outcome != Outcome.optimal or result.abandoned:
            return None
        solution = self.h.getSolution()
        self.lp_x = np.asarray(solution.col_value)
        reduced = np.asarray(solution.col_dual)
        dual = np.asarray(solution.row_dual)
        # HiGHS's row duals are d(objective)/d(row bound): for this maximisation, >= 0 on binding upper bounds.
        # A column at its bound of 1 holds part of its job's dual (a positive reduced profit): move it into
        # sigma_j, so that sigma_j is all a new column of the job must beat (the same LP optimum, dual feasible).
        jobs = np.asarray(self.column_job, dtype=np.int64)
        held = np.zeros(self.jobs)
        np.maximum.at(held, jobs, np.maximum(reduced, 0.0))
        n = len(self.members)
        sigma = held
        sigma[self.members] += dual[:n]
        self.lp_reduced = reduced - held[jobs]
        mu = np.maximum(dual[n: n + self.groups], 0.0)
        lam = np.maximum(dual[n + self.groups:], 0.0)
        return float(result.incumbent), sigma, mu, lam

    def solve_mip(
        self, deadline: float, gap: float, start: Counts | None, consider: Consider, threads=None,
        keep: np.ndarray | None = None,
    ):
        """The integer master over the columns so far (only those in `keep`, when given, with the rest fixed at
        0); it starts from `start`, whose columns join the master; each improving solution goes to `consider`."""
        if self.broken:
            return None
        chosen = None
        if start is not None:
            placed = self._columns_in(start)
            self.add(placed)
            chosen = [self.index[key] for key in placed]
        n = len(self.columns)
        every = np.arange(n, dtype=np.int32)
        h = self.h
        h.changeColsIntegrality(n, every, np.ones(n, dtype=np.uint8))
        if keep is not None:
            keep = np.concatenate((keep, np.ones(n - len(keep), dtype=bool)))
            if chosen is not None:
                keep[chosen] = True
            h.changeColsBounds(n, every, np.zeros(n), keep.astype(np.float64))
        warm = None
        if chosen is not None:
            x = np.zeros(n)
            x[chosen] = 1.0
            warm = (every, x)

        def on_poll(_objective, values, _bound):
            if values is not None:
                consider(self.counts(values))

        result = run_highs(
            h, wall_deadline=deadline, mip_gap=gap, threads=threads, warm_start=warm, on_poll=on_poll,
            presolve=keep is not None,
        )
        self.broken = result.abandoned
        if not result.abandoned:
            h.changeColsIntegrality(n, every, np.zeros(n, dtype=np.uint8))
            if keep is not None:
                h.changeColsBounds(n, every, np.zeros(n), np.ones(n))
        if result.values is not None:
            consider(self.counts(result.values))
        return result

    # -- pricing ---------------------------------------------------------------------------------------------

    def level_prices(self, mu: np.ndarray, lam: np.ndarray) -> np.ndarray:
        """pi_k = mu_g + lambda . (cap - idle) over the budgets g draws from, per kept level."""
        return mu[self.a.level_group] + self.extra * (self.member @ lam)[self.a.level_group]

    def price(
        self, sigma: np.ndarray, mu: np.ndarray, lam: np.ndarray, upper: np.ndarray | None = None
    ) -> list[tuple[int, Column]]:
        """Allocations with a positive reduced profit at these duals, the best one per job. `upper`
        (a bound on each job's best profit at these prices, `bound_jobs`) skips the jobs that cannot have one."""
        pi = self.level_prices(mu, lam)
        tol = REDUCED_TOL * self.a.weight
        candidates = self.row >= 0 if upper is None else (upper - sigma > tol) & (self.row >= 0)
        out: list[tuple[int, Column]] = []
        for block in self._blocks(np.flatnonzero(candidates)):
            out.extend(self._price_block(block, sigma, pi))
        return out

    def _blocks(self, jobs: np.ndarray) -> list[np.ndarray]:
        """`jobs` in blocks of PRICE_BLOCK with similar device limits (a block enumerates up to its largest)."""
        order = jobs[np.argsort(self.limit[jobs], kind="stable")]
        return [order[i: i + PRICE_BLOCK] for i in range(0, len(order), PRICE_BLOCK)]

    @cached_property
    def limit(self) -> np.ndarray:
        return np.minimum(self.a.max_devices, self.a.count.max(initial=1))

    def _price_block(self, jobs: np.ndarray, sigma: np.ndarray, pi: np.ndarray) -> list[tuple[int, Column]]:
        a = self.a
        s_all = a.speeds(jobs)  # [J, K]
        J, K = s_all.shape
        maxd = a.max_devices[jobs].astype(np.float64)
        w, p = a.weight[jobs], a.p[jobs]
        rows = np.arange(J)[:, None]
        front, on_front = self._frontier(s_all, pi)  # [J, F]: the levels no other is both faster and cheaper than
        hosts = front  # every frontier level may carry the serial part
        H = hosts.shape[1]
        s_host = np.where(on_front, s_all[rows, hosts], 0.0)  # [J, H]
        # Extra levels: the frontier (the host's own level among them), and the cheapest per unit of speed.
        ok = s_all > 0
        ratio = np.where(ok, pi[None, :] / np.where(ok, s_all, 1.0), np.inf)  # [J, K]
        e = min(EXTRA_LEVELS, K)
        cheap = np.argpartition(ratio, e - 1, axis=1)[:, :e] if K > e else np.broadcast_to(np.arange(K), (J, K))
        pool = np.concatenate((front, cheap), axis=1)
        pool_s = np.where(np.concatenate((on_front, np.ones(cheap.shape, dtype=bool)), axis=1), s_all[rows, pool], 0.0)
        extra = np.broadcast_to(pool[:, None, :], (J, H, pool.shape[1]))  # [J, H, E]
        E = extra.shape[2]
        s_extra = np.broadcast_to(pool_s[:, None, :], (J, H, E))
        M = int(min(maxd.max(initial=1.0), a.count.max(initial=1)))  # extra devices 0 .. M-1
        m = np.arange(M, dtype=np.float64)
        same = a.level_group[extra] == a.level_group[hosts][:, :, None]
        room = a.count[a.level_group[extra]] - same.astype(np.int64)  # extra devices besides the host
        r = s_host[:, :, None, None] + m * s_extra[..., None]  # [J, H, E, M]
        pp = p[:, None, None, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            top = np.maximum(s_host[:, :, None, None], np.where(m > 0, s_extra[..., None], 0.0))
            S = 1.0 / ((1.0 - pp) / top + pp / r)
            total = m + 1.0
            valid = (
                (s_host > 0)[:, :, None, None]
                & ((m == 0) | (s_extra > 0)[..., None])
                & (m <= room[..., None])
                & (total <= maxd[:, None, None, None])
                & (total >= a.min_devices[jobs][:, None, None, None])
            )
            valid &= self._meets_deadline(jobs, S)
        # m = 0 is the same column whatever the extra level: keep it once (the host's own level).
        valid[:, :, 1:, 0] = False
        reduced = w[:, None, None, None] * S - pi[hosts][:, :, None, None] - m * pi[extra][..., None] - sigma[jobs][:, None, None, None]
        flat = np.where(valid, reduced, -np.inf).reshape(J, -1)
        best = flat.argmax(axis=1)
        gains = flat[np.arange(J), best]
        # The spread families cost more: only for the jobs the single-level one found nothing for, and only with
        # the hosts that family rated best.
        spread_gains, spread = np.full(J, -np.inf), [None] * J
        rest = np.flatnonzero(~(gains > REDUCED_TOL * w))
        if len(rest):
            per_host = flat[rest].reshape(len(rest), H, -1).max(axis=2)
            pick = np.argsort(-per_host, axis=1, kind="stable")[:, : min(SPREAD_HOSTS, H)]
            sub = np.arange(len(rest))[:, None]
            found, columns = self._spread_block(
                jobs[rest], sigma, pi, s_all[rest], hosts[rest][sub, pick], s_host[rest][sub, pick]
            )
            spread_gains[rest] = found
            for i, column in zip(rest, columns):
                spread[i] = column
        out: list[tuple[int, Column]] = []
        for i in range(J):
            gain = max(gains[i], spread_gains[i])
            if not np.isfinite(gain) or gain <= REDUCED_TOL * w[i]:
                continue
            if spread_gains[i] > gains[i]:
                out.append((int(jobs[i]), spread[i]))
                continue
            h, x_e, mm = np.unravel_index(best[i], (H, E, M))
            k, l = int(hosts[i, h]), int(extra[i, h, x_e])
            column = {k: 1}
            if mm:
                column[l] = column.get(l, 0) + int(mm)
            out.append((int(jobs[i]), tuple(sorted(column.items()))))
        return out

    def _meets_deadline(self, jobs: np.ndarray, S: np.ndarray) -> np.ndarray:
        """Runtime W / S <= D for speedups S [J, ...], with a margin inside the verifier's tolerance (a column
        must stay valid exactly)."""
        shape = (-1,) + (1,) * (S.ndim - 1)
        deadline = self.a.deadline[jobs].reshape(shape)
        work = self.a.work[jobs].reshape(shape)
        return ~np.isfinite(deadline) | (work <= S * deadline * (1 + DEADLINE_RTOL - DEADLINE_MARGIN))

    def _spread_block(self, jobs, sigma, pi, s_all, hosts, s_host) -> tuple[np.ndarray, list[Column | None]]:
        """The other families: host k and m devices spread over groups, each filled to its room before the next
        (no group faster than k): each group at its cheapest level per unit of speed, cheapest groups first; or
        at its fastest level no faster than k, fastest groups first (cheapest among equals). They reach the
        allocations that one group's room cannot hold. Per job: (best reduced profit, its column)."""
        best_gains = np.full(len(jobs), -np.inf)
        best_columns: list[Column | None] = [None] * len(jobs)
        J, H = hosts.shape
        variants = (
            (np.broadcast_to(self.cheapest_levels(pi), (J, H, len(self.a.count))), False),
            (self._fastest_below(s_all, s_host), True),
        )
        for level_of, fastest_first in variants:
            gains, columns = self._spread(jobs, sigma, pi, s_all, hosts, s_host, level_of, fastest_first)
            better = gains > best_gains
            best_gains = np.where(better, gains, best_gains)
            best_columns = [c if b else old for c, b, old in zip(columns, better, best_columns)]
        return best_gains, best_columns

    def cheapest_levels(self, pi: np.ndarray) -> np.ndarray:
        """[G] each group's level with the least price per unit of speed (a job's factor scales a group's levels
        alike)."""
        a = self.a
        order = np.lexsort((pi / a.level_speed, a.level_group))
        _, first = np.unique(a.level_group[order], return_index=True)
        return order[first]

    @cached_property
    def group_levels(self) -> np.ndarray:
        """[G, L] the kept levels of each group, padded with -1."""
        a = self.a
        width = int(np.bincount(a.level_group, minlength=len(a.count)).max(initial=1))
        out = np.full((len(a.count), width), -1, dtype=np.int64)
        for g in range(len(a.count)):
            levels = np.flatnonzero(a.level_group == g)
            out[g, : len(levels)] = levels
        return out

    def _fastest_below(self, s_all: np.ndarray, s_host: np.ndarray) -> np.ndarray:
        """[J, H, G] each group's fastest level no faster than the host (its slowest when none is)."""
        levels = self.group_levels
        speed = np.where(levels >= 0, s_all[:, np.maximum(levels, 0)], np.nan)  # [J, G, L]
        fits = speed[:, None, :, :] <= s_host[:, :, None, None]
        key = np.where(fits, speed[:, None, :, :], -np.inf)
        pick = np.where(fits.any(axis=3), key.argmax(axis=3), np.nan_to_num(speed, nan=np.inf).argmin(axis=2)[:, None, :])
        return levels[np.arange(levels.shape[0])[None, None, :], pick]

    def _spread(
        self, jobs, sigma, pi, s_all, hosts, s_host, level_of, fastest_first: bool
    ) -> tuple[np.ndarray, list[Column | None]]:
        a = self.a
        J, H = hosts.shape
        G = len(a.count)
        sg = np.take_along_axis(np.broadcast_to(s_all[:, None, :], (J, H, s_all.shape[1])), level_of.reshape(J, H, G), axis=2)
        pg = pi[level_of]  # [J, H, G]
        allowed = (sg > 0) & (sg <= s_host[:, :, None])
        ratio = np.where(allowed, pg / np.where(sg > 0, sg, 1.0), np.inf)
        if fastest_first:
            order = np.lexsort((ratio, np.where(allowed, -sg, np.inf)), axis=2)
        else:
            order = np.argsort(ratio, axis=2, kind="stable")
        host_group = a.level_group[hosts]
        room = a.count[None, None, :] - (np.arange(G)[None, None, :] == host_group[:, :, None])
        room = np.where(allowed, room, 0)
        room_s = np.take_along_axis(room, order, axis=2).astype(np.float64)
        speed_s = np.take_along_axis(sg, order, axis=2)
        price_s = np.take_along_axis(pg, order, axis=2)
        cum_room = np.cumsum(room_s, axis=2)
        cum_speed = np.cumsum(room_s * speed_s, axis=2)
        cum_cost = np.cumsum(room_s * price_s, axis=2)
        maxd = a.max_devices[jobs].astype(np.float64)
        M = int(min(maxd.max(initial=1.0), a.count.sum()))
        m = np.arange(M, dtype=np.float64)
        full = (cum_room[..., None] <= m).sum(axis=2)  # [J, H, M] groups filled whole
        prev = np.maximum(full - 1, 0)

        def at(x, i):
            return np.take_along_axis(x, i, axis=2)

        base_room = np.where(full > 0, at(cum_room, prev), 0.0)
        part = np.minimum(full, G - 1)
        rest = m - base_room
        extra_speed = np.where(full > 0, at(cum_speed, prev), 0.0) + rest * at(speed_s, part)
        cost = np.where(full > 0, at(cum_cost, prev), 0.0) + rest * at(price_s, part)
        p = a.p[jobs][:, None, None]
        sh = s_host[:, :, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            S = 1.0 / ((1.0 - p) / sh + p / (sh + extra_speed))
            valid = (
                (sh > 0) & (m <= cum_room[..., -1:]) & (m + 1 <= maxd[:, None, None])
                & (m + 1 >= a.min_devices[jobs][:, None, None]) & np.isfinite(extra_speed)
            )
            valid &= self._meets_deadline(jobs, S)
        reduced = a.weight[jobs][:, None, None] * S - pi[hosts][:, :, None] - cost - sigma[jobs][:, None, None]
        flat = np.where(valid, reduced, -np.inf).reshape(J, -1)
        best = flat.argmax(axis=1)
        gains = flat[np.arange(J), best]
        columns: list[Column | None] = []
        for i in range(J):
            if not np.isfinite(gains[i]):
                columns.append(None)
                continue
            h, left = divmod(int(best[i]), M)
            column = {int(hosts[i, h]): 1}
            for g in order[i, h]:
                if left <= 0:
                    break
                n = min(int(room[i, h, g]), left)
                if n > 0:
                    k = int(level_of[i, h, g])
                    column[k] = column.get(k, 0) + n
                    left -= n
            columns.append(tuple(sorted(column.items())))
        return gains, columns

    def _frontier(self, s_all: np.ndarray, pi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per job, the eligible levels that no other level beats on both speed and price (the larger group
        first among equals): any allocation's host and devices can be swapped for frontier ones at no loss but
        the room in their groups. ([J, F] level indices, [J, F] mask of real entries.)"""
        J, K = s_all.shape
        count = self.a.count[self.a.level_group].astype(np.float64)
        price = np.broadcast_to(pi, (J, K))
        order = np.lexsort((np.broadcast_to(-count, (J, K)), price, -s_all), axis=1)
        rows = np.arange(J)[:, None]
        sorted_price = price[rows, order]
        before = np.minimum.accumulate(sorted_price, axis=1)
        before = np.concatenate((np.full((J, 1), np.inf), before[:, :-1]), axis=1)
        front = (sorted_price < before) & (s_all[rows, order] > 0)
        F = max(1, int(front.sum(axis=1).max(initial=1)))
        first = np.argsort(~front, axis=1, kind="stable")[:, :F]
        return order[rows, first], front[rows, first]

    def smoothed(self, sigma, mu, lam, upper, center_mu, center_lam) -> list[tuple[int, Column]]:
        """Columns priced at SMOOTHING x the center's prices + the rest x the LP's, for the jobs that may have
        an improving column at the LP's (`upper`, as for `price`)."""
        mu_s = SMOOTHING * center_mu + (1.0 - SMOOTHING) * mu
        lam_s = SMOOTHING * center_lam + (1.0 - SMOOTHING) * lam
        return self.price(sigma, mu_s, lam_s, upper)

    def improving(self, new: list[tuple[int, Column]], sigma, mu, lam) -> list[tuple[int, Column]]:
        """Those of `new` with a positive reduced profit at these duals."""
        pi = self.level_prices(mu, lam)
        return [
            (j, c) for j, c in new
            if self.value_of(j, c) - sum(pi[k] * n for k, n in c) - sigma[j] > REDUCED_TOL * self.a.weight[j]
        ]

    def seed(self, mu: np.ndarray, lam: np.ndarray) -> int:
        """Each job's best column at these device prices (sigma = 0): without them the first rounds' duals are
        about 0 and every job asks for its largest allocation."""
        return self.add(self.price(np.zeros(self.jobs), mu, lam))

    def job_bounds(self, jobs: np.ndarray, pi: np.ndarray) -> np.ndarray:
        """An upper bound on each job's best weighted speedup less the price of its devices, over every
        allocation: the host k is its fastest device (a frontier level: a dominated host is swapped for a better
        one), and m = 0 .. max_devices - 1 others, no faster, cost at least m psi(Delta / m) for total speed
        Delta, psi the lower convex hull of the frontier's (speed, price) points no faster than k. psi is the
        least chord between two such points (i, i2) over [s_i2, s_i]: so every pair is tried, and on it
        w S(s_k, s_k + Delta) - pi_k - m pi_i2 - b (Delta - m s_i2), b the chord's slope, is maximised in closed
        form (concave in Delta). Device counts per group (room) are relaxed; so is the mix within m."""
        out = np.empty(len(jobs))
        for start in range(0, len(jobs), PRICE_BLOCK):
            block = jobs[start: start + PRICE_BLOCK]
            out[start: start + len(block)] = self._job_bound_block(block, pi, np.full(len(block), -np.inf))
        return out

    def _job_bound_block(self, jobs: np.ndarray, pi: np.ndarray, floor: np.ndarray) -> np.ndarray:
        """`job_bounds` for one block; hosts whose closed-form bound is at most `floor` [J] are not enumerated
        (their closed form stands for them)."""
        a = self.a
        s_all = a.speeds(jobs)
        J = len(jobs)
        front, on_front = self._frontier(s_all, pi)  # by speed, fastest first; price falls along it
        F = front.shape[1]
        rows = np.arange(J)[:, None]
        sf = np.where(on_front, s_all[rows, front], 0.0)  # [J, F]
        pf = np.where(on_front, pi[front], np.inf)
        i1, i2 = np.triu_indices(F)  # pairs i1 <= i2: s_i1 >= s_i2
        host_upper = self._host_upper(jobs, s_all, pi)[rows, front]  # [J, F]
        kept = on_front & (host_upper > floor[:, None])
        left_out = np.where(on_front & ~kept, host_upper, -np.inf).max(axis=1, initial=-np.inf)
        H = max(1, int(kept.sum(axis=1).max(initial=1)))
        position = np.argsort(~kept, axis=1, kind="stable")[:, :H]  # [J, H] frontier positions of kept hosts
        kept = kept[rows, position]
        M = int(min(a.max_devices[jobs].max(initial=1), a.count.sum()))
        m = np.arange(M, dtype=np.float64)[None, None, None, :]  # [1, 1, 1, M]
        s_hi, s_lo = sf[:, i1], sf[:, i2]  # [J, P]
        p_hi, p_lo = pf[:, i1], pf[:, i2]
        with np.errstate(divide="ignore", invalid="ignore"):
            slope = np.where(s_hi > s_lo, (p_hi - p_lo) / (s_hi - s_lo), 0.0)
            slope = np.maximum(slope, 0.0)
        pair_ok = on_front[:, i1] & on_front[:, i2]
        # host h may use pair (i1, i2) when both are no faster than it: h <= i1 along the frontier.
        host_ok = (position[:, :, None] <= i1[None, None, :]) & kept[:, :, None] & pair_ok[:, None, :]  # [J, H, P]
        s_k = sf[rows, position][:, :, None, None]  # [J, H, 1, 1]
        p = a.p[jobs][:, None, None, None]
        w = a.weight[jobs][:, None, None, None]
        maxd = a.max_devices[jobs][:, None, None, None].astype(np.float64)
        mind = a.min_devices[jobs][:, None, None, None].astype(np.float64)
        b = slope[:, None, :, None]
        lo_s, hi_s = s_lo[:, None, :, None], s_hi[:, None, :, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            need = _least_r(a, jobs, p, s_k)
            d_lo = np.maximum(m * lo_s, need - s_k)
            d_hi = m * hi_s
            root = _best_r(s_k, w, p, b, np.inf) - s_k
            best = -np.inf
            for delta in (np.clip(root, d_lo, d_hi), d_lo, d_hi):
                r = s_k + delta
                S = 1.0 / ((1.0 - p) / s_k + p / r)
                value = w * S - pi[front[rows, position]][:, :, None, None] - m * p_lo[:, None, :, None] - b * (delta - m * lo_s)
                best = np.maximum(best, np.where(np.isfinite(value), value, -np.inf))
        valid = (
            host_ok[..., None] & (s_k > 0) & (d_lo <= d_hi * (1 + 1e-12) + 1e-12)
            & (m + 1 <= maxd) & (m + 1 >= mind)
        )
        # m = 0 needs no extra level: any one pair stands for it (the host alone).
        return np.maximum(np.where(valid, best, -np.inf).reshape(J, -1).max(axis=1), left_out)

    def _host_upper(self, jobs: np.ndarray, s_all: np.ndarray, pi: np.ndarray) -> np.ndarray:
        """[J, K] a bound on a job's profit with host level k: every other device costs at least c per unit of
        speed (c the job's least price per speed), so w S(s_k, R) - pi_k - c (R - s_k) at its best R in
        [max(s_k, need_k), s_k max_devices] (the closed form of optsched.solve.bound for one host; -inf where the
        host cannot meet the deadline)."""
        a = self.a
        ok = s_all > 0
        safe = np.where(ok, s_all, 1.0)
        c = np.where(ok, pi[None, :] / safe, np.inf).min(axis=1)[:, None]
        c = np.where(np.isfinite(c), np.maximum(c, 1e-12), 1e-12)
        p, w = a.p[jobs][:, None], a.weight[jobs][:, None]
        hi = safe * a.max_devices[jobs][:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            lo = np.maximum(safe, _least_r(a, jobs, p, safe))
            best = -np.inf
            for r in (np.clip(_best_r(safe, w, p, c, np.inf), lo, hi), lo, hi):
                S = 1.0 / ((1.0 - p) / safe + p / r)
                best = np.maximum(best, np.where(np.isfinite(S), w * S - pi[None, :] - c * (r - safe), -np.inf))
        return np.where(ok & (lo <= hi * (1 + 1e-12)), best, -np.inf)

    def refined_bound(
        self, sigma: np.ndarray, mu: np.ndarray, lam: np.ndarray, upper: np.ndarray, deadline: float = math.inf
    ) -> float:
        """D(mu, lambda) with the closed form replaced by `job_bounds` where it may be loose: for the jobs whose
        closed-form profit exceeds what the master pays them (sigma_j) by more than REFINE_TOL of their weight,
        the loosest first until `deadline` (the others keep the closed form, valid too). `upper` must be the
        closed form over every job with all its device-count multipliers (`bound` with NU_SHARES)."""
        a = self.a
        pays = np.where(a.must, upper, np.maximum(upper, 0.0)) - sigma
        jobs = np.flatnonzero(pays > REFINE_TOL * a.weight)
        jobs = jobs[np.argsort(-pays[jobs], kind="stable")]  # the loosest first, while time lasts
        pi = self.level_prices(mu, lam)
        values = upper.copy()
        for start in range(0, len(jobs), PRICE_BLOCK):
            if time.monotonic() >= deadline:
                break
            block = jobs[start: start + PRICE_BLOCK]
            exact = self._job_bound_block(block, pi, sigma[block])
            values[block] = np.where(np.isfinite(exact), np.minimum(upper[block], exact), upper[block])
        values = np.where(a.must, values, np.maximum(values, 0.0))
        return float(mu @ a.count + lam @ self.headroom + values.sum())

    def near_lp(self, share: float) -> np.ndarray:
        """Columns the last LP uses, and those whose reduced profit is within `share` of their value: the
        neighbourhood of the LP optimum where the integer master looks first."""
        values = np.asarray(self.values[: len(self.lp_x)])
        return (self.lp_x > 1e-9) | (self.lp_reduced >= -share * values)

    def bound(
        self, mu: np.ndarray, lam: np.ndarray, shares: tuple[float, ...] = FILTER_SHARES
    ) -> tuple[float, np.ndarray]:
        """D(mu, lambda), a proven upper bound on every plan's weighted speedup (optsched.solve.bound), and each
        job's part of it: an upper bound on the job's weighted speedup less the price of its devices. `shares`:
        the closed form's device-count multipliers (NU_SHARES, all of them, for the tightest)."""
        members = None if len(self.members) == self.jobs else self.members
        total, _, _, values = self.relax.evaluate_jobs(mu, lam, members, shares=shares)
        return total, values


@dataclass
class ColumnStats:
    """What column generation did, for the plan's timings and the benchmark."""

    rounds: int = 0
    columns: int = 0
    converged: bool = False  # pricing found no column with a positive reduced profit
    lp_value: float = math.nan
    bound: float = math.inf  # the least bound found (refined at the last duals)
    pricing_s: float = 0.0
    mip_s: float = 0.0


def sample_prices(data: ModelData, first: Counts, deadline: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray] | None:
    """Device and watt prices from the master of a random sample of SAMPLE_JOBS jobs with that share of the
    capacities and budgets (POP's observation: a random share of the jobs on the same share of the resources
    prices them much as the whole does), or None for a workload that small."""
    jobs = len(data.jobs)
    if jobs < 2 * SAMPLE_JOBS:
        return None
    members = np.random.default_rng(seed).choice(jobs, SAMPLE_JOBS, replace=False)
    sample = ColumnMaster(data, members, scale=SAMPLE_JOBS / jobs)
    sample.add_counts(first)
    prices = None
    while time.monotonic() < deadline:
        solved = sample.solve_lp(deadline)
        if solved is None:
            break
        _, sigma, mu, lam = solved
        prices = (mu, lam)
        if not sample.add(sample.price(sigma, mu, lam, sample.bound(mu, lam)[1])):
            break
    return prices


def solve_by_columns(
    data: ModelData, *, best: Callable[[], tuple[Counts, float]], deadline: float, gap: float, consider: Consider,
    on_bound: Callable[[float], None], threads=None,
) -> ColumnStats:
    """Column generation for COLUMNS_SHARE of the time (or until pricing finds nothing), the bound refined at the
    last duals, then the integer master: first over the columns near the LP optimum, then over all of them.
    `best()` gives the best plan so far and its value (the master starts from it); every integer plan goes to
    `consider`, every bound to `on_bound`."""
    started = time.monotonic()
    stats = ColumnStats()
    master = ColumnMaster(data)
    first, _ = best()
    master.add_counts(first)
    lp_deadline = started + COLUMNS_SHARE * (deadline - started)
    prices = sample_prices(data, first, started + SAMPLE_SHARE * (lp_deadline - started))
    if prices is not None:
        master.seed(*prices)
    duals = None
    while time.monotonic() < lp_deadline:
        solved = master.solve_lp(lp_deadline)
        if solved is None:
            break
        stats.lp_value, sigma, mu, lam = solved
        stats.rounds += 1
        bound, upper = master.bound(mu, lam)
        duals = (sigma, mu, lam, upper)
        stats.bound = min(stats.bound, bound)
        on_bound(bound)
        new = []
        if prices is not None:
            # Priced between the LP's duals and the sample's (which are near where the LP's end up), the first
            # rounds ask for the allocations the optimum uses rather than every job's largest one.
            new = master.improving(master.smoothed(sigma, mu, lam, upper, *prices), sigma, mu, lam)
        if not new:
            new = master.price(sigma, mu, lam, upper)
        log.debug("column generation round %d: LP %.3f, bound %.3f, %d new columns", stats.rounds, stats.lp_value, bound, len(new))
        if not master.add(new):
            stats.converged = True
            break
    stats.columns = len(master.columns)
    if duals is None:
        stats.pricing_s = time.monotonic() - started
        return stats
    sigma, mu, lam, _ = duals
    # The first plan re-placed along the master's prices: a plan in about a second even when the integer master
    # below finds nothing in its time (10,000 jobs and more).
    consider(improve(data, best()[0], master.level_prices(mu, lam)))
    # refined <= the closed form at these prices, with every multiplier: no need to keep that one too.
    _, upper = master.bound(mu, lam, NU_SHARES)
    refined = master.refined_bound(sigma, mu, lam, upper, deadline=time.monotonic() + REFINE_SHARE * (deadline - time.monotonic()))
    stats.bound = min(stats.bound, refined)
    on_bound(refined)
    stats.pricing_s = time.monotonic() - started
    # The integer master's own gap is measured against its LP: stop it where the plan is within `gap` of our bound.
    mip_gap = max(MIN_MASTER_GAP, 0.5 * ((1.0 + gap) * stats.lp_value / stats.bound - 1.0))
    restricted_deadline = time.monotonic() + RESTRICTED_SHARE * (deadline - time.monotonic())
    result = master.solve_mip(restricted_deadline, mip_gap, best()[0], consider, threads, keep=master.near_lp(NEAR_LP_SHARE))
    log.debug("restricted master MILP: %s", result)
    if (stats.bound - best()[1]) > gap * abs(best()[1]) and time.monotonic() < deadline:
        result = master.solve_mip(deadline, mip_gap, best()[0], consider, threads)
        log.debug("master MILP: %s", result)
    stats.mip_s = time.monotonic() - started - stats.pricing_s
    return stats



def _least_r(a, jobs: np.ndarray, p: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The least aggregate speed R meeting each job's deadline with host speed s (any shape, jobs first):
    p / (D/W - (1-p)/s), inf where no R does, 0 without a deadline; D widened by the verifier's tolerance, since a
    bound must cover every allocation the verifier accepts."""
    d_over_w = (a.deadline[jobs] * (1 + DEADLINE_RTOL) / a.work[jobs]).reshape((-1,) + (1,) * (s.ndim - 1))
    safe = np.where(s > 0, s, 1.0)
    slack = d_over_w - (1.0 - p) / safe
    need = np.where(np.isfinite(d_over_w), np.where(slack > 0, p / np.where(slack > 0, slack, 1.0), np.inf), 0.0)
    return np.where((p == 0) & np.isfinite(d_over_w), np.where(s * d_over_w >= 1.0, 0.0, np.inf), need)


def _best_r(s: np.ndarray, w: np.ndarray, p: np.ndarray, c: np.ndarray, otherwise: float) -> np.ndarray:
    """The R where w dS/dR = c (S = 1 / ((1-p)/s + p/R)): s (sqrt(w p / c) - p) / (1 - p); `otherwise` where
    there is none (c <= 0 or p = 1: S keeps paying for speed)."""
    exists = (c > 0) & (p < 1)
    return np.where(
        exists, s * (np.sqrt(w * p / np.where(c > 0, c, 1.0)) - p) / np.where(p < 1, 1.0 - p, 1.0), otherwise
    )
