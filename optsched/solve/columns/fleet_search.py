"""The integer master by parts of the fleet: a large-neighbourhood search over its racks (optsched.solve.columns).

A step frees a random set of *blocks* of the fleet (a block: the groups under one budget that does not cover
the whole fleet, a rack; a group under none is a block of its own) and solves the integer master over the jobs
the best plan places inside them, and those it leaves out, with every other job's column fixed:

    max sum_c v_c x_c  over the columns of the freed jobs that use freed groups only, the fixed columns at 1.

A MILP small enough for HiGHS to improve within a step's few seconds, where the master over every column finds
nothing better in its time. Why: racks3 2,000 x 144 seed 0 (36 racks), from the 60-s plan (13,726, 3.3 % from the
bound), 30 s of HiGHS over every column of the master improved nothing; 30 s of these steps, half the racks freed a
step, reached 14,031-14,055 (1.2-1.0 %); with 3 or 6 racks a step, 13,853 and 13,926.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import highspy
import numpy as np
from scipy import sparse

from optsched.solve.columns.master import ColumnMaster, Consider
from optsched.solve.extract import Counts
from optsched.solve.highs import MIN_SOLVE_S, Outcome, new_highs, run_highs

log = logging.getLogger(__name__)

# The share of the blocks the first step frees; after a step with nothing better, SHRINK x as many if it stopped
# at its limit, GROW x (at least one more) if it was solved to its optimum. Why half: from the same plan of racks3
# 2,000 x 144 (36 racks), 30 s of steps freeing 3, 6, 10, 18 and 24 racks gave 13,853, 13,926, 13,964, 14,055 and
# 14,072 (bound 14,195).
FREED_SHARE = 0.5
SHRINK = 0.75
GROW = 1.25
# A step's time: half the time left, within [2 x MIN_SOLVE_S, STEP_MAX_S] seconds.
STEP_SHARE = 0.5
STEP_MAX_S = 3.0
# The relative gap asked of a step's MILP: near its optimum, since it is small.
STEP_GAP = 1e-4
SEED = 0


@dataclass
class SearchStats:
    """What the search did, for the debug log and the tests."""

    steps: int = 0
    improved: int = 0
    start_value: float = 0.0
    value: float = 0.0


def blocks_of(master: ColumnMaster) -> np.ndarray:
    """Per group, its block: the first budget that covers it and not every group (a rack), else a block of its
    own (numbered after the budgets)."""
    member = master.member > 0  # [G, B]
    partial = member.sum(axis=0) < master.groups
    block = np.arange(master.budget_rows, master.budget_rows + master.groups)
    for g in range(master.groups):
        inside = np.flatnonzero(member[g] & partial)
        if len(inside):
            block[g] = inside[0]
    return np.unique(block, return_inverse=True)[1]


def search_blocks(
    master: ColumnMaster, best: Callable[[], tuple[Counts, float]], deadline: float, consider: Consider,
    open_gap: Callable[[], bool], threads: int | None = None,
) -> SearchStats:
    """Steps until `deadline`, until `open_gap()` says the best plan is close enough, or until a step freeing every
    block is proven optimal with nothing better; every plan a step finds goes to `consider` (which keeps the
    best)."""
    stats = SearchStats(start_value=best()[1], value=best()[1])
    block = blocks_of(master)
    blocks = int(block.max()) + 1 if len(block) else 0
    if blocks < 2:
        return stats
    rng = np.random.default_rng(SEED)
    freed = max(1, round(FREED_SHARE * blocks))
    columns = _Columns(master, block, blocks)
    while open_gap() and deadline - time.monotonic() > 2 * MIN_SOLVE_S:
        counts, value = best()
        chosen = np.zeros(blocks, dtype=bool)
        chosen[rng.choice(blocks, freed, replace=False)] = True
        started = time.monotonic()
        step_s = min(STEP_MAX_S, max(2 * MIN_SOLVE_S, STEP_SHARE * (deadline - started)))
        step_deadline = min(deadline, started + step_s)
        outcome = columns.step(counts, chosen, step_deadline, consider, threads)
        stats.steps += 1
        better = best()[1] > value
        stats.improved += better
        log.debug("block search step %d: %d blocks freed, %s, plan %.3f", stats.steps, int(chosen.sum()),
                  outcome.value, best()[1])
        if not better:
            if outcome is Outcome.optimal and freed == blocks:
                break  # every block freed and proven: the plan is the master's optimum over its columns
            # Nothing better: a step stopped by its time frees fewer blocks, one solved to its optimum more.
            grown = max(freed + 1, int(GROW * freed)) if outcome is Outcome.optimal else int(SHRINK * freed)
            freed = min(blocks, max(1, grown))
    stats.value = best()[1]
    return stats


class _Columns:
    """The master's columns as matrices (usage per row, blocks), grown as plans bring new columns."""

    def __init__(self, master: ColumnMaster, block: np.ndarray, blocks: int):
        self.master, self.block, self.blocks = master, block, blocks
        self.capacity = np.concatenate((master.a.count.astype(np.float64), master.headroom))
        self.usage = sparse.csr_matrix((0, len(self.capacity)))
        self.in_blocks = np.zeros((0, blocks), dtype=bool)
        self._grow()

    def _grow(self) -> None:
        master, start = self.master, self.usage.shape[0]
        if start == len(master.columns):
            return
        rows = [np.concatenate(master.usage(column)) for column in master.columns[start:]]
        self.usage = sparse.vstack((self.usage, sparse.csr_matrix(np.array(rows)))).tocsr()
        level_group = master.a.level_group
        extra = np.zeros((len(rows), self.blocks), dtype=bool)
        for i, column in enumerate(master.columns[start:]):
            for k, _ in column:
                extra[i, self.block[level_group[k]]] = True
        self.in_blocks = np.vstack((self.in_blocks, extra))

    def step(
        self, counts: Counts, chosen: np.ndarray, deadline: float, consider: Consider, threads: int | None
    ) -> Outcome:
        """The MILP of one step (module docstring): its outcome; each plan it finds goes to `consider`."""
        master = self.master
        keys = master.columns_in(counts)
        master.add(keys)
        self._grow()
        placed = np.full(master.jobs, -1, dtype=np.int64)
        for key in keys:
            placed[key[0]] = master.index[key]
        inside = ~np.any(self.in_blocks[:, ~chosen], axis=1)
        owner = np.asarray(master.column_job, dtype=np.int64)
        free = placed < 0
        free[placed >= 0] = inside[placed[placed >= 0]]
        fixed = placed[(placed >= 0) & ~free]
        candidates = np.flatnonzero(inside & free[owner])
        if len(candidates) == 0:
            return Outcome.optimal
        left = self.capacity - np.asarray(self.usage[fixed].sum(axis=0)).ravel()
        jobs, job_row = np.unique(owner[candidates], return_inverse=True)
        usage = self.usage[candidates].tocsc()
        rows = np.flatnonzero(np.diff(usage.T.tocsr().indptr))  # the resources the candidates use
        a = sparse.vstack((
            sparse.csr_matrix((np.ones(len(candidates)), (job_row, np.arange(len(candidates)))),
                              shape=(len(jobs), len(candidates))),
            usage[:, rows].T.tocsr(),
        )).tocsc()
        must = master.a.must[jobs].astype(np.float64)
        h = new_highs()
        lower = np.concatenate((must, np.full(len(rows), -highspy.kHighsInf)))
        upper = np.concatenate((np.ones(len(jobs)), left[rows]))
        h.passModel(_mip(a, np.asarray(master.values)[candidates], lower, upper))
        x0 = np.isin(candidates, placed[free & (placed >= 0)]).astype(np.float64)

        def plan(values: np.ndarray) -> Counts:
            x = np.zeros(len(master.columns))
            x[fixed] = 1.0
            x[candidates[values > 0.5]] = 1.0
            return master.counts(x)

        def on_poll(_objective, values, _bound):
            if values is not None:
                consider(plan(values))

        result = run_highs(h, wall_deadline=deadline, mip_gap=STEP_GAP, threads=threads,
                           warm_start=(np.arange(len(candidates), dtype=np.int32), x0), on_poll=on_poll,
                           presolve=True)
        if result.values is not None:
            consider(plan(result.values))
        return result.outcome


def _mip(a: sparse.csc_matrix, value: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> highspy.HighsLp:
    """max value . x, lower <= a x <= upper, x binary."""
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = a.shape[1], a.shape[0]
    lp.col_cost_, lp.col_lower_, lp.col_upper_ = value, np.zeros(a.shape[1]), np.ones(a.shape[1])
    lp.row_lower_, lp.row_upper_ = lower, upper
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = a.indptr, a.indices, a.data
    lp.sense_ = highspy.ObjSense.kMaximize
    lp.integrality_ = [highspy.HighsVarType.kInteger] * a.shape[1]
    return lp
