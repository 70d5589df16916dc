"""An upper bound on weighted speedup at any size, without the LP: Lagrangian relaxation of capacity and budgets.

Price every device of group g at mu_g (speedup units per device) and every extra watt drawn under budget b at
lambda_b >= 0. With prices, the workload falls apart into one problem per job, and the bound is

    D(mu, lambda) = sum_j v_j + sum_g mu_g count_g + sum_b lambda_b (budget_b - idle draw in b)

for any prices >= 0 (weak duality), where v_j bounds job j's best weighted speedup minus the price of its devices.
v_j is bounded in closed form: with host level k (speed s_k, price pi_k), every other device costs at least c_j
per unit of speed (c_j = the least price per speed over j's options), so for R in [max(s_k, need_k), s_k x
max_devices]: w S(s_k, R) - pi_k - c_j (R - s_k), concave in R, maximised where dS/dR = c_j / w. A job may stay
out (v_j >= 0) unless it must run; a deadline requires R >= need_k (runtime W/S <= D with that host).

The prices are improved by projected subgradient steps (Polyak step towards the best plan's value) in scaled
coordinates (each price times its capacity), within a time budget; every D evaluated is a valid bound, and the
least is kept. Only for `weighted_speedup` (min_power keeps its LP/trivial bound).
"""

from __future__ import annotations

import math
import time

import numpy as np

from optsched.model.data import ModelData
from optsched.model.expressions import budgets
from optsched.solve.blocks import map_blocks

# Jobs per vectorised block (bounds the memory of the job x level arrays, per thread): two threads on blocks of
# 1,024 hold what one block of 2,048 did before the threads.
BLOCK_JOBS = 1024
# Subgradient steps before the cutting planes take over.
WARM_STEPS = 4
# Multipliers of each job's device-count limit tried, as shares of w_j x its fastest speed; the least bound wins.
NU_SHARES = (0.0, 0.02, 0.1, 0.3)


class Relaxation:
    def __init__(self, data: ModelData):
        a = data.arrays
        self.a = a
        self.k_group = a.level_group
        self.extra = a.level_cap - a.idle[a.level_group]
        scopes = budgets(data)
        self.member = np.zeros((len(a.count), len(scopes)))
        self.headroom = np.zeros(len(scopes))
        for b, (domain, limit) in enumerate(scopes):
            inside = np.array([domain is None or g.domain == domain for g in data.groups])
            self.member[inside, b] = 1.0
            self.headroom[b] = limit - float((a.idle * a.count)[inside].sum())
        self.jobs = len(a.p)
        self.threads = 1  # threads evaluating the blocks of jobs (optsched.solve.blocks)

    def evaluate(self, mu: np.ndarray, lam: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """D(mu, lambda), and the devices per group and extra watts per budget the per-job optima use."""
        total, devices, watts, _ = self.evaluate_jobs(mu, lam)
        return total, devices, watts

    def evaluate_jobs(
        self, mu: np.ndarray, lam: np.ndarray, jobs: np.ndarray | None = None, shares: tuple[float, ...] = NU_SHARES
    ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
        """`evaluate`, and v_j: each job's bound on its weighted speedup less the price of its devices (only
        `jobs`, when given: the total is then theirs alone; 0 for the others). Any `shares` give valid bounds;
        fewer are cheaper and looser."""
        a = self.a
        price = mu[self.k_group] + self.extra * (self.member @ lam)[self.k_group]
        total = float(mu @ a.count + lam @ self.headroom)
        devices = np.zeros(len(a.count))
        watts = np.zeros(len(self.headroom))
        values = np.zeros(self.jobs)
        which = np.arange(self.jobs) if jobs is None else jobs
        blocks = [which[start: start + BLOCK_JOBS] for start in range(0, len(which), BLOCK_JOBS)]
        parts = map_blocks(lambda block: self._block(block, price, shares), blocks, self.threads)
        for block, (v, dev, w) in zip(blocks, parts, strict=True):
            values[block] = v
            total += float(v.sum())
            devices += dev
            watts += w
        return total, devices, watts, values

    def _block(self, jobs: np.ndarray | slice, price: np.ndarray, shares: tuple[float, ...] = NU_SHARES):
        a = self.a
        p = a.p[jobs][:, None]
        w = a.weight[jobs][:, None]
        maxd = a.max_devices[jobs][:, None].astype(np.float64)
        s = a.speeds(jobs)  # [J, K], 0 where not eligible
        ok = s > 0
        safe_s = np.where(ok, s, 1.0)
        rows = np.arange(s.shape[0])
        with np.errstate(divide="ignore", invalid="ignore"):
            # Least R meeting the deadline with each host: p / (D/W - (1-p)/s).
            d_over_w = (a.deadline[jobs] / a.work[jobs])[:, None]
            slack = d_over_w - (1.0 - p) / safe_s
            need = np.where(np.isfinite(d_over_w), np.where(slack > 1e-12, p / slack, np.inf), 0.0)
            serial_ok = s * a.deadline[jobs][:, None] >= a.work[jobs][:, None]
            need = np.where((p == 0) & np.isfinite(d_over_w), np.where(serial_ok, 0.0, np.inf), need)
            lo = np.maximum(s, need)
            hi = s * maxd
            valid = ok & (lo <= hi * (1 + 1e-12)) & (maxd >= a.min_devices[jobs][:, None])
            best_v = np.full(s.shape[0], np.inf)
            best_host = np.zeros(s.shape[0], dtype=np.int64)
            best_cheap = np.zeros(s.shape[0], dtype=np.int64)
            best_r = np.zeros(s.shape[0])
            top = (w[:, 0] * s.max(axis=1))[:, None]
            # The other devices (at most max_devices - 1) cost at least c_nu (R - s_host) - nu (max_devices - 1)
            # for any nu >= 0, c_nu = least (price + nu) / speed: the count limit, relaxed by its own multiplier.
            for share in shares:
                nu = share * top
                ratio = np.where(ok, (price[None, :] + nu) / safe_s, np.inf)
                cheapest = ratio.argmin(axis=1)
                c = ratio[rows, cheapest][:, None]
                c = np.where(np.isfinite(c), np.maximum(c, 0.0), 0.0)
                root = np.where(
                    c > 0, s * (np.sqrt(w * p / np.where(c > 0, c, 1.0)) - p) / np.where(p < 1, 1.0 - p, 1.0), np.inf
                )
                r = np.where(p >= 1, np.where(w > c, hi, lo), np.where(p <= 0, lo, np.clip(root, lo, hi)))
                speed_up = 1.0 / ((1.0 - p) / safe_s + p / np.where(r > 0, r, 1.0))
                value = w * speed_up - price[None, :] - c * (r - s) + nu * (maxd - 1)
                value = np.where(valid, value, -np.inf)
                host = value.argmax(axis=1)
                v = value[rows, host]
                better = v < best_v
                best_v = np.where(better, v, best_v)
                best_host = np.where(better, host, best_host)
                best_cheap = np.where(better, cheapest, best_cheap)
                best_r = np.where(better, r[rows, host], best_r)
        must = a.must[jobs]
        # A must-run job with no valid host cannot be placed at all (precheck reports that): it adds nothing.
        admitted = (must | (best_v > 0)) & np.isfinite(best_v)
        v = np.where(admitted, best_v, 0.0)
        host, cheapest = best_host, best_cheap
        n_extra = np.where(admitted, (best_r - s[rows, host]) / np.maximum(s[rows, cheapest], 1e-12), 0.0)
        devices = np.bincount(self.k_group[host[admitted]], minlength=len(a.count)).astype(np.float64)
        devices += np.bincount(self.k_group[cheapest[admitted]], weights=n_extra[admitted], minlength=len(a.count))
        per_group_watts = np.bincount(
            self.k_group[host[admitted]], weights=self.extra[host[admitted]], minlength=len(a.count)
        )
        per_group_watts += np.bincount(
            self.k_group[cheapest[admitted]], weights=(n_extra * self.extra[cheapest])[admitted], minlength=len(a.count)
        )
        return v, devices, per_group_watts @ self.member


def lagrangian_bound(data: ModelData, target: float | None, deadline: float, max_iterations: int = 200) -> float | None:
    """The least D(mu, lambda) found by `deadline`: an upper bound on the weighted speedup of every plan."""
    return lagrangian(data, deadline, max_iterations, target)[0]


def lagrangian(
    data: ModelData, deadline: float, max_iterations: int = 200, target: float | None = None
) -> tuple[float | None, np.ndarray | None]:
    """(the least D(mu, lambda) found by `deadline`, the price of a device at each kept level there). (None, None)
    for min_power. See `Lagrangian`."""
    if data.workload.objective != "weighted_speedup" or not len(data.jobs) or not len(data.groups):
        return None, None
    dual = Lagrangian(data)
    dual.run(deadline, target, max_iterations)
    return dual.best, dual.prices()


class Lagrangian:
    """The prices, chosen by a trust-region cutting-plane method on D (each evaluation gives a subgradient cut
    D(x) >= D(x_i) + g_i (x - x_i); a small LP, solved by HiGHS, proposes the next prices inside a box around the
    best so far), in scaled coordinates x = (mu x count, lambda x budget headroom); a few Polyak steps towards a
    plan's value first find the region of good prices. `run` may be called again to go on where it stopped."""

    def __init__(
        self, data: ModelData, *, relax: Relaxation | None = None,
        start: tuple[np.ndarray, np.ndarray] | None = None, shares: tuple[float, ...] = NU_SHARES,
    ):
        """`relax`: a Relaxation of `data` to share; `start`: the prices (mu, lambda) to start from (column
        generation's last duals) instead of zero; `shares`: the closed form's device-count multipliers (fewer are
        cheaper per evaluation, every evaluation is still a valid bound)."""
        self.relax = relax if relax is not None else Relaxation(data)
        a = self.relax.a
        self.groups = len(a.count)
        self.shares = shares
        self.scale = np.concatenate(
            (np.maximum(a.count.astype(np.float64), 1.0), np.maximum(np.abs(self.relax.headroom), 1.0))
        )
        self.center = np.zeros(len(self.scale)) if start is None else np.concatenate(start) * self.scale
        self.best = math.inf
        self.cuts: list = []
        self.radius: float | None = None

    def _evaluate(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        a, g = self.relax.a, self.groups
        value, devices, watts, _ = self.relax.evaluate_jobs(
            x[:g] / self.scale[:g], x[g:] / self.scale[g:], shares=self.shares
        )
        self.cuts.append((value, np.concatenate((a.count - devices, self.relax.headroom - watts)) / self.scale, x))
        if value < self.best:
            self.best, self.center = value, x
        return value, self.cuts[-1][1]

    def multipliers(self) -> tuple[np.ndarray, np.ndarray]:
        """(mu, lambda) at the least D found (the start, or zero, before any evaluation)."""
        g = self.groups
        return self.center[:g] / self.scale[:g], self.center[g:] / self.scale[g:]

    def prices(self) -> np.ndarray | None:
        """mu_g + lambda . (cap - idle) over the budgets g draws from, per kept level, at the best prices."""
        if not math.isfinite(self.best):
            return None
        g, relax = self.groups, self.relax
        mu, lam = self.center[:g] / self.scale[:g], self.center[g:] / self.scale[g:]
        return mu[relax.k_group] + relax.extra * (relax.member @ lam)[relax.k_group]

    def run(self, deadline: float, target: float | None = None, max_iterations: int = 200) -> float:
        if self.radius is None:
            value, g = self._evaluate(self.center)
            x = self.center
            goal = target if target is not None else 0.5 * value
            for _ in range(WARM_STEPS):
                g = np.where((x <= 0) & (g > 0), 0.0, g)
                norm = float(g @ g)
                if norm <= 1e-18 or time.monotonic() >= deadline:
                    break
                x = np.maximum(0.0, x - max(value - goal, 1e-9 * abs(value)) / norm * g)
                value, g = self._evaluate(x)
            self.radius = max(1e-3, float(np.abs(self.center).max()) if self.center.any() else 0.01 * abs(self.best))
        for _ in range(max_iterations):
            if time.monotonic() >= deadline:
                break
            proposal = _master(self.cuts, self.center, self.radius)
            if proposal is None:
                break
            x, predicted = proposal
            if self.best - predicted <= 1e-5 * abs(self.best):
                if self.radius < 1e-6 * max(1.0, abs(self.best)):
                    break
                self.radius /= 2
                continue
            before = self.best
            value, _ = self._evaluate(x)
            if value < before - 0.1 * (before - predicted):
                self.radius *= 2
            elif value >= before:
                # The model was far off: look closer (the cut stays and sharpens the model).
                self.radius *= 0.7
        return self.best


def _master(cuts, center: np.ndarray, radius: float) -> tuple[np.ndarray, float] | None:
    """min t s.t. t >= D_i + g_i (x - x_i) for every cut, x >= 0, |x - center| <= radius (each coordinate)."""
    import highspy

    from optsched.solve.highs import new_highs

    h = new_highs()
    n = len(center)
    lower = np.concatenate((np.maximum(0.0, center - radius), [-highspy.kHighsInf]))
    upper = np.concatenate((center + radius, [highspy.kHighsInf]))
    h.addVars(n + 1, lower, upper)
    cost = np.zeros(n + 1)
    cost[n] = 1.0
    h.changeColsCost(n + 1, np.arange(n + 1, dtype=np.int32), cost)
    for value, g, x in cuts:
        # t - g.x >= D_i - g.x_i
        index = np.arange(n + 1, dtype=np.int32)
        coef = np.concatenate((-g, [1.0]))
        h.addRow(float(value - g @ x), highspy.kHighsInf, n + 1, index, coef)
    h.setOptionValue("time_limit", 10.0)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    sol = np.array(h.getSolution().col_value)
    return sol[:n], float(sol[n])

