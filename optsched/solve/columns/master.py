"""The restricted master of column generation (optsched.solve.columns): one column per job allocation, its LP
duals and its integer solve in HiGHS."""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import cached_property

import highspy
import numpy as np

from optsched.model.data import Arrays, ModelData
from optsched.schema.tolerances import DEADLINE_RTOL
from optsched.solve.bound import Relaxation
from optsched.solve.extract import Counts
from optsched.solve.highs import Outcome, new_highs, run_highs

log = logging.getLogger(__name__)

Consider = Callable[[Counts], None]
Column = tuple[tuple[int, int], ...]  # ((kept level, devices), ...) of one job
# A column whose reduced profit is within this share of its value from 0 counts as used (it may re-enter soon).
REDUCED_KEEP = 0.01
# An LP value within this of 1 counts as integral; a rounded plan may exceed a budget by this share (the verifier's
# own tolerance is wider; the planner's feasibility check has the last word).
INTEGRAL_TOL = 1e-6
WATT_TOL = 1e-9
# Deadlines are met with this margin inside the verifier's tolerance (a column must stay valid exactly).
DEADLINE_MARGIN = 1e-9


class ColumnMaster:
    """The restricted master in HiGHS, grown column by column; rows: jobs, then groups, then budgets.

    `members` (default: every job) and `scale` make a sample's master: only those jobs, capacities and budget
    headroom times `scale`, no job required (a sample's must-run jobs may not fit its share); its duals
    approximate the whole master's (see `sample_prices`). `threads`: threads pricing and bounding its jobs' blocks
    (optsched.solve.blocks)."""

    def __init__(self, data: ModelData, members: np.ndarray | None = None, scale: float = 1.0, threads: int = 1):
        self.data = data
        a = data.arrays
        self.a = a
        self.relax = Relaxation(data)
        self.relax.threads = threads
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
        self.idle = np.zeros(0, dtype=np.int64)  # LP solves since each column was last used (optsched: `drop`)
        self.h = new_highs()
        h, inf = self.h, highspy.kHighsInf
        h.setOptionValue("presolve", "off")
        must = a.must[self.members].astype(np.float64) if members is None else np.zeros(len(self.members))
        lower = np.concatenate((must, np.full(self.groups + self.budget_rows, -inf)))
        upper = np.concatenate((np.ones(len(self.members)), scale * a.count.astype(np.float64), scale * self.headroom))
        h.addRows(len(lower), lower, upper, 0, np.zeros(1, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0))
        h.changeObjectiveSense(highspy.ObjSense.kMaximize)

    @property
    def threads(self) -> int:
        """Threads pricing and bounding the blocks: the relaxation's, so that both always agree."""
        return self.relax.threads

    # -- columns ---------------------------------------------------------------------------------------------

    def value_of(self, j: int, column: Column) -> float:
        """w_j S_j of job j holding `column` (the host is its fastest device)."""
        return float(self.a.weight[j] * self.speedup_of(j, column))

    def speedup_of(self, j: int, column: Column) -> float:
        """S_j = 1 / ((1 - p) / s_host + p / R) of job j holding `column`, the host its fastest device."""
        a = self.a
        speeds = [a.factor[j, a.level_group[k]] * a.level_speed[k] for k, _ in column]
        r = sum(s * n for s, (_, n) in zip(speeds, column, strict=True))
        p = a.p[j]
        return float(1.0 / ((1.0 - p) / max(speeds) + p / r))

    def add(self, new: list[tuple[int, Column]]) -> int:
        """Add the columns not already in the master; returns how many were new."""
        fresh = list(dict.fromkeys((j, c) for j, c in new if (j, c) not in self.index and self.row[j] >= 0))
        if not fresh:
            return 0
        starts: list[int] = []
        index: list[int] = []
        coef: list[float] = []
        cost: list[float] = []
        G, base_budget = len(self.members), len(self.members) + self.groups
        for j, column in fresh:
            self.index[(j, column)] = len(self.columns)
            devices, watts = self.usage(column)
            starts.append(len(index))
            rows = (
                [int(self.row[j])] + [G + g for g in np.flatnonzero(devices).tolist()]
                + [base_budget + b for b in np.flatnonzero(watts).tolist()]
            )
            vals = [1.0] + devices[devices != 0].tolist() + watts[watts != 0].tolist()
            index.extend(rows)
            coef.extend(vals)
            value = self.value_of(j, column)
            cost.append(value)
            self.column_job.append(j)
            self.columns.append(column)
            self.values.append(value)
        n = len(fresh)
        self.idle = np.concatenate((self.idle, np.zeros(n, dtype=np.int64)))
        self.h.addCols(
            n, np.array(cost), np.zeros(n), np.ones(n), len(index), np.array(starts, dtype=np.int32),
            np.array(index, dtype=np.int32), np.array(coef, dtype=np.float64),
        )
        return n

    def add_counts(self, counts: Counts) -> int:
        """Every placed job's allocation in `counts` as a column (a plan's columns keep it reachable)."""
        return self.add(self.columns_in(counts))

    def columns_in(self, counts: Counts) -> list[tuple[int, Column]]:
        """Each placed job of `counts` with its allocation as a column."""
        per_job: dict[int, list[tuple[int, int]]] = {}
        for (j, g, lv), n in counts.items():
            if n > 0:
                per_job.setdefault(j, []).append((self.level_of[(g, lv)], n))
        return [(j, tuple(sorted(c))) for j, c in per_job.items()]

    @cached_property
    def level_of(self) -> dict[tuple[int, int], int]:
        """(group, level index) -> kept level."""
        return {
            (int(g), int(lv)): k for k, (g, lv) in enumerate(zip(self.a.level_group, self.a.level_index, strict=True))
        }

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

    def drop(self, after: int, keep: Counts | None = None) -> int:
        """Column management: delete the columns that no LP solve has used (value > 0, or a reduced profit within
        REDUCED_KEEP of their value) for more than `after` solves, except the allocations of `keep` (the best
        plan: the integer master starts from it). Returns how many went; the rest keep their order."""
        gone = self.idle > after
        if keep is not None:
            for key in self.columns_in(keep):
                at = self.index.get(key)
                if at is not None:
                    gone[at] = False
        if not gone.any():
            return 0
        order = np.flatnonzero(gone).astype(np.int32)
        self.h.deleteCols(len(order), order)
        stay = np.flatnonzero(~gone)
        self.column_job = [self.column_job[c] for c in stay]
        self.columns = [self.columns[c] for c in stay]
        self.values = [self.values[c] for c in stay]
        self.index = {(j, c): i for i, (j, c) in enumerate(zip(self.column_job, self.columns, strict=True))}
        self.idle = self.idle[stay]
        solved = stay[stay < len(self.lp_x)]  # columns added since the last LP have no LP values yet
        self.lp_x, self.lp_reduced = self.lp_x[solved], self.lp_reduced[solved]
        return len(order)

    # -- LP --------------------------------------------------------------------------------------------------

    def solve_lp(self, deadline: float) -> tuple[float, np.ndarray, np.ndarray, np.ndarray] | None:
        """(LP value, sigma [J], mu [G], lambda [B]) at the master's LP optimum, or None if not solved in time."""
        if self.broken:
            return None
        result = run_highs(
            self.h, wall_deadline=deadline, mip_gap=0.0, relax=True, integer_columns=np.zeros(0, dtype=np.int32)
        )
        self.broken = result.abandoned
        if result.outcome != Outcome.optimal or result.abandoned or result.incumbent is None:
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
        used = (self.lp_x > 1e-9) | (self.lp_reduced >= -REDUCED_KEEP * np.asarray(self.values))
        self.idle = np.where(used, 0, self.idle + 1)
        mu = np.maximum(dual[n: n + self.groups], 0.0)
        lam = np.maximum(dual[n + self.groups:], 0.0)
        return float(result.incumbent), sigma, mu, lam

    def solve_mip(
        self, deadline: float, gap: float, start: Counts | None, consider: Consider, threads=None,
        keep: np.ndarray | None = None, fix: np.ndarray | None = None,
    ):
        """The integer master over the columns so far (only those in `keep`, when given, with the rest fixed at
        0; those in `fix` fixed at 1); it starts from `start`, whose columns join the master; each improving
        solution goes to `consider`."""
        if self.broken:
            return None
        chosen = None
        if start is not None:
            placed = self.columns_in(start)
            self.add(placed)
            chosen = [self.index[key] for key in placed]
        n = len(self.columns)
        every = np.arange(n, dtype=np.int32)
        h = self.h
        h.changeColsIntegrality(n, every, np.ones(n, dtype=np.uint8))
        bounded = keep is not None or fix is not None
        if bounded:
            # Columns added since the masks were made (the start's) are free.
            keep = np.concatenate((np.ones(0, dtype=bool) if keep is None else keep, np.ones(n, dtype=bool)))[:n]
            if chosen is not None:
                keep[chosen] = True
            fixed = np.concatenate((np.zeros(0, dtype=bool) if fix is None else fix, np.zeros(n, dtype=bool)))[:n]
            keep |= fixed
            h.changeColsBounds(n, every, fixed.astype(np.float64), keep.astype(np.float64))
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
            presolve=bounded,
        )
        self.broken = result.abandoned
        if not result.abandoned:
            h.changeColsIntegrality(n, every, np.zeros(n, dtype=np.uint8))
            if bounded:
                h.changeColsBounds(n, every, np.zeros(n), np.ones(n))
        if result.values is not None:
            consider(self.counts(result.values))
        return result

    # -- the LP's integer neighbourhood -------------------------------------------------------------------------

    def usage(self, column: Column) -> tuple[np.ndarray, np.ndarray]:
        """A column's devices per group and extra watts per budget (its rows in the master)."""
        devices = np.zeros(self.groups)
        watts = np.zeros(self.budget_rows)
        for k, n in column:
            g = self.a.level_group[k]
            devices[g] += n
            watts += n * self.extra[k] * self.member[g]
        return devices, watts

    def fractional(self) -> np.ndarray:
        """The columns the last LP holds strictly between 0 and 1 (INTEGRAL_TOL)."""
        return (self.lp_x > INTEGRAL_TOL) & (self.lp_x < 1.0 - INTEGRAL_TOL)

    def shrunk(self, columns: np.ndarray) -> list[tuple[int, Column]]:
        """Each of `columns` (positions in the master) with 1 .. n fewer devices at one of its levels, where the
        job still has its min_devices and meets its deadline: the same jobs on smaller allocations."""
        a = self.a
        found: list[tuple[int, Column]] = []
        for c in np.asarray(columns).tolist():
            j, column = self.column_job[c], self.columns[c]
            room = sum(n for _, n in column) - max(1, int(a.min_devices[j]))
            for i, (k, n) in enumerate(column):
                for fewer in range(1, min(n, room) + 1):
                    kept = ((k, n - fewer),) if fewer < n else ()
                    found.append((j, column[:i] + kept + column[i + 1:]))
        if not found:
            return []
        jobs = np.array([j for j, _ in found])
        speedups = np.array([self.speedup_of(j, column) for j, column in found])
        return [variant for variant, ok in zip(found, meets_deadline(a, jobs, speedups), strict=True) if ok]

    def integral(self) -> np.ndarray:
        """The columns the last LP holds at 1 (INTEGRAL_TOL): with a few dozen coupling rows, nearly every job's."""
        return self.lp_x >= 1.0 - INTEGRAL_TOL

    def rounded(self) -> Counts | None:
        """The last LP solution rounded to a (partial) plan: the must-run jobs' columns, then the others', each by
        LP value, largest first, each taken if its job has none yet and it fits the devices and watts left; then
        a must-run job without one takes its smallest column that fits. With the must-run jobs first, the LP's
        integral columns of the others may not all fit; a must-run job may find no room at all (the caller
        completes the plan, optsched.solve.construct). None without an LP solution."""
        if len(self.lp_x) == 0 or len(self.members) != self.jobs:
            return None
        devices_left = self.a.count.astype(np.float64)  # whole counts, exact in floats
        watts_left = self.headroom.copy()
        taken: dict[int, int] = {}

        def take(c: int) -> bool:
            devices, watts = self.usage(self.columns[c])
            if np.any(devices > devices_left):
                return False
            if np.any(watts > watts_left + WATT_TOL * np.maximum(1.0, np.abs(watts_left))):
                return False
            devices_left[:] -= devices
            watts_left[:] -= watts
            taken[self.column_job[c]] = c
            return True

        used = np.flatnonzero(self.lp_x > INTEGRAL_TOL)
        must = self.a.must[np.asarray(self.column_job, dtype=np.int64)[used]]
        for c in used[np.lexsort((-self.lp_x[used], ~must))].tolist():
            if self.column_job[c] not in taken:
                take(c)
        missing = [j for j in np.flatnonzero(self.a.must).tolist() if j not in taken]
        if missing:
            of_job: dict[int, list[int]] = {}
            for c, j in enumerate(self.column_job):
                of_job.setdefault(j, []).append(c)
            for j in missing:
                # Its columns that hold fewest devices first (the most room left for the others).
                options = sorted(of_job.get(j, []), key=lambda c: sum(n for _, n in self.columns[c]))
                any(take(c) for c in options)
        x = np.zeros(len(self.columns))
        x[list(taken.values())] = 1.0
        return self.counts(x)

    # -- prices ----------------------------------------------------------------------------------------------

    def level_prices(self, mu: np.ndarray, lam: np.ndarray) -> np.ndarray:
        """pi_k = mu_g + lambda . (cap - idle) over the budgets g draws from, per kept level."""
        return mu[self.a.level_group] + self.extra * (self.member @ lam)[self.a.level_group]

    def near_lp(self, share: float) -> np.ndarray:
        """Columns the last LP uses, and those whose reduced profit is within `share` of their value: the
        neighbourhood of the LP optimum where the integer master looks first."""
        values = np.asarray(self.values[: len(self.lp_x)])
        return (self.lp_x > 1e-9) | (self.lp_reduced >= -share * values)


def meets_deadline(a: Arrays, jobs: np.ndarray, S: np.ndarray) -> np.ndarray:
    """Runtime W / S <= D for speedups S [J, ...] of `jobs`, with DEADLINE_MARGIN inside the verifier's tolerance."""
    shape = (-1,) + (1,) * (S.ndim - 1)
    deadline = a.deadline[jobs].reshape(shape)
    work = a.work[jobs].reshape(shape)
    return ~np.isfinite(deadline) | (work <= S * deadline * (1 + DEADLINE_RTOL - DEADLINE_MARGIN))
