"""Bounds for column generation (optsched.solve.columns): the Lagrangian D(mu, lambda) at the master's duals,
valid for any prices, with a tighter per-job bound where the closed form may be loose."""

from __future__ import annotations

import math
import time

import numpy as np

from optsched.schema.tolerances import DEADLINE_RTOL
from optsched.solve.columns.master import ColumnMaster
from optsched.solve.columns.pricing import PRICE_BLOCK, frontier

# A timed refinement starts with one job, to learn how long a job takes on this machine now: the cost of a block
# grows faster than its size (it enumerates up to its largest frontier and device limit), and on the `mixed`
# family of bench.large a first block of 16 jobs took 5 s (one job: 0.035 s), 27 s past its deadline under load.
FIRST_TIMED_BLOCK = 1

# The closed-form bound's device-count multipliers while pricing (optsched.solve.bound: any give a valid bound;
# one is four times cheaper than its default four).
FILTER_SHARES = (0.0,)
# Jobs whose closed-form bound exceeds what the master pays them by more than this share of their weight get
# the tighter (and costlier) per-job bound.
REFINE_TOL = 1e-4
# The per-job bound's arrays [jobs, hosts, frontier pairs, counts] hold at most this many elements a block (8 bytes
# each, a dozen arrays alive): larger blocks are split.
BLOCK_ELEMENTS = 4_000_000
# A job whose arrays alone would exceed this is not refined (its closed form stands): at the prices of the final
# bound one job of the mixed family (64 devices, a frontier of hundreds of levels) took 19.6 s, past a 2.5-s share
# of the time limit (docs/benchmarks/planner-large.md).
REFINE_MAX_ELEMENTS = 4_000_000


class JobBounds:
    """Upper bounds at `master`'s duals: on every plan (`bound`, `refined_bound`) and per job (`job_bounds`)."""

    def __init__(self, master: ColumnMaster):
        self.master = master
        self.a = master.a

    def bound(
        self, mu: np.ndarray, lam: np.ndarray, shares: tuple[float, ...] = FILTER_SHARES
    ) -> tuple[float, np.ndarray]:
        """D(mu, lambda), a proven upper bound on every plan's weighted speedup (optsched.solve.bound), and each
        job's part of it: an upper bound on the job's weighted speedup less the price of its devices. `shares`:
        the closed form's device-count multipliers (NU_SHARES, all of them, for the tightest)."""
        members = None if len(self.master.members) == self.master.jobs else self.master.members
        total, _, _, values = self.master.relax.evaluate_jobs(mu, lam, members, shares=shares)
        return total, values


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

    def _job_bound_block(
        self, jobs: np.ndarray, pi: np.ndarray, floor: np.ndarray, cap: float = math.inf
    ) -> np.ndarray:
        """`job_bounds` for one block; hosts whose closed-form bound is at most `floor` [J] are not enumerated
        (their closed form stands for them). A block whose [J, hosts, pairs, counts] arrays would hold more than
        BLOCK_ELEMENTS is split in two (each job's bound is its own, so only the time changes); a job alone above
        `cap` elements is not enumerated at all: nan, the caller keeps its closed form."""
        a = self.a
        s_all = a.speeds(jobs)
        J = len(jobs)
        front, on_front = frontier(self.a, s_all, pi)  # by speed, fastest first; price falls along it
        F = front.shape[1]
        rows = np.arange(J)[:, None]
        host_upper = self._host_upper(jobs, s_all, pi)[rows, front]  # [J, F]
        kept = on_front & (host_upper > floor[:, None])
        H = max(1, int(kept.sum(axis=1).max(initial=1)))
        M = int(min(a.max_devices[jobs].max(initial=1), a.count.sum()))
        elements = J * H * (F * (F + 1) // 2) * M
        if elements > BLOCK_ELEMENTS and J > 1:
            half = J // 2
            return np.concatenate((
                self._job_bound_block(jobs[:half], pi, floor[:half], cap),
                self._job_bound_block(jobs[half:], pi, floor[half:], cap),
            ))
        if elements > cap:
            return np.full(J, np.nan)
        sf = np.where(on_front, s_all[rows, front], 0.0)  # [J, F]
        pf = np.where(on_front, pi[front], np.inf)
        i1, i2 = np.triu_indices(F)  # pairs i1 <= i2: s_i1 >= s_i2
        left_out = np.where(on_front & ~kept, host_upper, -np.inf).max(axis=1, initial=-np.inf)
        position = np.argsort(~kept, axis=1, kind="stable")[:, :H]  # [J, H] frontier positions of kept hosts
        kept = kept[rows, position]
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
            best: np.ndarray | float = -np.inf
            for delta in (np.clip(root, d_lo, d_hi), d_lo, d_hi):
                r = s_k + delta
                S = 1.0 / ((1.0 - p) / s_k + p / r)
                value = (
                    w * S - pi[front[rows, position]][:, :, None, None] - m * p_lo[:, None, :, None]
                    - b * (delta - m * lo_s)
                )
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
            best: np.ndarray | float = -np.inf
            for r in (np.clip(_best_r(safe, w, p, c, np.inf), lo, hi), lo, hi):
                S = 1.0 / ((1.0 - p) / safe + p / r)
                best = np.maximum(best, np.where(np.isfinite(S), w * S - pi[None, :] - c * (r - safe), -np.inf))
        return np.where(ok & (lo <= hi * (1 + 1e-12)), best, -np.inf)

    def refined_bound(
        self, sigma: np.ndarray, mu: np.ndarray, lam: np.ndarray, upper: np.ndarray, deadline: float = math.inf
    ) -> float:
        """D(mu, lambda) with the closed form replaced by `job_bounds` where it may be loose: for the jobs whose
        closed-form profit exceeds what the master pays them (sigma_j) by more than REFINE_TOL of their weight,
        the loosest first until `deadline` (the others keep the closed form, valid too, as do those too large to
        enumerate within REFINE_MAX_ELEMENTS). `upper` must be the
        closed form over every job with all its device-count multipliers (`bound` with NU_SHARES)."""
        a = self.a
        pays = np.where(a.must, upper, np.maximum(upper, 0.0)) - sigma
        jobs = np.flatnonzero(pays > REFINE_TOL * a.weight)
        jobs = jobs[np.argsort(-pays[jobs], kind="stable")]  # the loosest first, while time lasts
        pi = self.master.level_prices(mu, lam)
        values = upper.copy()
        start, size = 0, PRICE_BLOCK if math.isinf(deadline) else FIRST_TIMED_BLOCK
        while start < len(jobs) and time.monotonic() < deadline:
            block = jobs[start: start + size]
            began = time.monotonic()
            exact = self._job_bound_block(block, pi, sigma[block], cap=REFINE_MAX_ELEMENTS)
            values[block] = np.where(np.isfinite(exact), np.minimum(upper[block], exact), upper[block])
            start += len(block)
            size = _next_block(size, time.monotonic() - began, deadline)
        values = np.where(a.must, values, np.maximum(values, 0.0))
        return float(mu @ a.count + lam @ self.master.headroom + values.sum())


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


def _next_block(size: int, took_s: float, deadline: float) -> int:
    """The next block's size: a loaded machine made one block of PRICE_BLOCK jobs take 6 s, past the caller's
    deadline, so a timed refinement sizes each block to take at most a quarter of the time left, and at most twice
    the last (each job's bound is computed on its own, so the sizes change when the loop stops, never the
    values)."""
    if math.isinf(deadline):
        return PRICE_BLOCK
    per_job = max(took_s, 1e-6) / size
    fits = int(0.25 * max(deadline - time.monotonic(), 0.0) / per_job)
    # At most doubling: a larger block may cost more per job than the one measured.
    return max(1, min(PRICE_BLOCK, 2 * size, fits))
