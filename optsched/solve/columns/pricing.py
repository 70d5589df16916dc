"""Pricing for column generation (optsched.solve.columns): at the master's duals, each job's allocation with the
best positive reduced profit (one level's devices besides the host, or devices spread over groups)."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from functools import cached_property
from itertools import repeat

import numpy as np

from optsched.model.data import Arrays
from optsched.solve.blocks import map_blocks
from optsched.solve.columns.fanout import FAN_OUT_MIN_BLOCKS, PricingFanOut, PricingSession, shares
from optsched.solve.columns.master import Column, ColumnMaster, meets_deadline

# Jobs priced per vectorised block (bounds the memory of the job x host x extra x count arrays).
PRICE_BLOCK = 128
# Extra levels tried besides the frontier: the cheapest per unit of speed at the current prices.
EXTRA_LEVELS = 3
# Hosts per job the spread families try (those the single-level family rates best).
SPREAD_HOSTS = 4
# Hosts per job the single-level family pairs with every extra level: those it rates best with their own level
# and the cheap ones as extras. Why: its work grows with hosts x extras, and a block's frontier is up to 70 levels
# long on `mixed` 2,000 x 192 (22-27 on racks and racks3): there, in 60 s, every host gave 19-20 rounds and a gap
# of 6.4-7.2 %, 24 hosts 76-77 rounds and a proven 0.81-0.90 % (8 hosts: 0.49-0.85 %, but racks3 2,000 x 144's
# plans fell 2.7-3.7 % short against 1.5-1.8 %; docs/benchmarks/planner-large.md). A round that finds nothing
# prices again with every host (`Pricing.price`), so "no column" keeps its meaning.
HOSTS_PRICED = 24
# A reduced profit below this (relative to the job's weight) is no improvement.
REDUCED_TOL = 1e-7


class Pricing:
    """Prices columns for `master`'s jobs at its duals (sigma per job, mu per device, lambda per watt): in this
    process (on the master's threads), over `workers` local processes, or, with `fan_out`, the large rounds on a
    queue's workers."""

    def __init__(
        self, master: ColumnMaster, workers: int = 1, fan_out: PricingFanOut | None = None,
        hosts: int | None = HOSTS_PRICED,
    ):
        self.master = master
        self.hosts = hosts
        self.a = master.a
        self.blocks = BlockPricer(master.a)
        self.workers = workers
        self.fan_out = fan_out
        self._pool: ProcessPoolExecutor | None = None
        self._session: PricingSession | None = None

    def price(
        self, sigma: np.ndarray, mu: np.ndarray, lam: np.ndarray, upper: np.ndarray | None = None,
        enough: int | None = None,
    ) -> list[tuple[int, Column]]:
        """Allocations with a positive reduced profit at these duals, the best one per job. `upper`
        (a bound on each job's best profit at these prices, `JobBounds.bound`) skips the jobs that cannot have
        one. Partial pricing: with `enough`, the jobs are priced most promising first (the largest upper_j -
        sigma_j, what the Lagrangian bound credits the job beyond what the master pays it), in segments of
        `enough` jobs (`enough` for each process pricing at once, with a queue's workers), and pricing stops after
        the segment where `enough` columns are found. Each job pairs its best `hosts` hosts with every extra level
        (HOSTS_PRICED); a round that finds nothing so is priced again with every host, so an empty answer still
        means that no candidate has a column."""
        pi = self.master.level_prices(mu, lam)
        tol = REDUCED_TOL * self.a.weight
        candidates = self.master.row >= 0 if upper is None else (upper - sigma > tol) & (self.master.row >= 0)
        jobs = np.flatnonzero(candidates)
        if enough is None or upper is None or len(jobs) <= enough:
            segments = [jobs]
        else:
            jobs = jobs[np.argsort(-(upper - sigma)[jobs], kind="stable")]
            step = enough * (1 if self.fan_out is None else self.fan_out.width())
            segments = [jobs[i: i + step] for i in range(0, len(jobs), step)]
        for hosts in dict.fromkeys((self.hosts, None)):
            out: list[tuple[int, Column]] = []
            for segment in segments:
                for found in self._price_blocks(self._blocks(segment), sigma, pi, hosts):
                    out.extend(found)
                if enough is not None and len(out) >= enough:
                    break
            if out:
                break
        return out

    def _price_blocks(
        self, blocks: list[np.ndarray], sigma: np.ndarray, pi: np.ndarray, hosts: int | None
    ) -> list[list[tuple[int, Column]]]:
        """Each block's columns, in block order: on the queue, in this process, or over `workers` processes (each
        job is priced on its own, so the answer is the same). `hosts`: see `BlockPricer.price_block`; a round
        with every host (the last of a converging search) stays here."""
        if self.fan_out is not None and len(blocks) >= FAN_OUT_MIN_BLOCKS and hosts == self.hosts:
            if self._session is None:
                self._session = self.fan_out.open(self.a, self.hosts)
            return self._session.price(
                blocks, sigma, pi, lambda block: self.blocks.price_block(block, sigma, pi, hosts)
            )
        pool = self._worker_pool() if len(blocks) > 1 else None
        if pool is None:
            threads = self.master.threads
            return map_blocks(lambda block: self.blocks.price_block(block, sigma, pi, hosts), blocks, threads)
        # One task per worker, not per block: the duals then cross to each worker once a round (racks 10,000 x
        # 100, 53 blocks: a round took 2.6 s in 2 processes by block against 0.7 s in this one).
        chunks = shares(len(blocks), self.workers)
        priced = pool.map(
            _price_in_worker, [[blocks[b] for b in c] for c in chunks], repeat(sigma), repeat(pi), repeat(hosts)
        )
        return [columns for chunk in priced for columns in chunk]

    def _worker_pool(self) -> ProcessPoolExecutor | None:
        """The pricing workers, started on first use; None for one worker, or inside a worker process (which
        may not have children: ProcessPoolExecutor's workers are not daemons, so look at the parent)."""
        if self.workers <= 1 or multiprocessing.parent_process() is not None:
            return None
        if self._pool is None:
            # fork: the workers inherit the arrays instead of unpickling them.
            self._pool = ProcessPoolExecutor(
                self.workers, mp_context=multiprocessing.get_context("fork"), initializer=_start_worker,
                initargs=(self.a,),
            )
        return self._pool

    def close(self) -> None:
        """Stop the pricing workers and close the queue's session (a no-op without them)."""
        if self._session is not None:
            self._session.close()
            self._session = None
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None

    def _blocks(self, jobs: np.ndarray) -> list[np.ndarray]:
        """`jobs` in blocks of PRICE_BLOCK with similar device limits (a block enumerates up to its largest)."""
        order = jobs[np.argsort(self.blocks.limit[jobs], kind="stable")]
        return [order[i: i + PRICE_BLOCK] for i in range(0, len(order), PRICE_BLOCK)]

    def improving(self, new: list[tuple[int, Column]], sigma, mu, lam) -> list[tuple[int, Column]]:
        """Those of `new` with a positive reduced profit at these duals."""
        pi = self.master.level_prices(mu, lam)
        return [
            (j, c) for j, c in new
            if self.master.value_of(j, c) - sum(pi[k] * n for k, n in c) - sigma[j] > REDUCED_TOL * self.a.weight[j]
        ]

    def seed(self, mu: np.ndarray, lam: np.ndarray, upper: np.ndarray | None = None, enough: int | None = None) -> int:
        """Each job's best column at these device prices (sigma = 0; with `upper` and `enough`, only the most
        promising jobs', as in `price`): without them the first rounds' duals are about 0 and every job asks for
        its largest allocation."""
        return self.master.add(self.price(np.zeros(self.master.jobs), mu, lam, upper, enough))


class BlockPricer:
    """The vectorised pricing of one block of jobs at level prices pi; it reads only the workload's arrays, so a
    worker process holds one of its own."""

    def __init__(self, a: Arrays):
        self.a = a

    @cached_property
    def limit(self) -> np.ndarray:
        return np.minimum(self.a.max_devices, self.a.count.max(initial=1))

    def price_block(
        self, jobs: np.ndarray, sigma: np.ndarray, pi: np.ndarray, hosts: int | None = HOSTS_PRICED
    ) -> list[tuple[int, Column]]:
        """Each job's column of best positive reduced profit among the families: one host and m devices of one
        extra level (with at most `hosts` hosts per job, the best rated; None: every frontier level), else the
        spread ones."""
        a = self.a
        s_all = a.speeds(jobs)  # [J, K]
        J, K = s_all.shape
        w = a.weight[jobs]
        rows = np.arange(J)[:, None]
        front, on_front = frontier(self.a, s_all, pi)  # [J, F]: the levels no other is both faster and cheaper than
        # Extra levels: the frontier (the host's own level among them), and the cheapest per unit of speed.
        ok = s_all > 0
        ratio = np.where(ok, pi[None, :] / np.where(ok, s_all, 1.0), np.inf)  # [J, K]
        e = min(EXTRA_LEVELS, K)
        cheap = np.argpartition(ratio, e - 1, axis=1)[:, :e] if K > e else np.broadcast_to(np.arange(K), (J, K))
        front_s, cheap_s = np.where(on_front, s_all[rows, front], 0.0), s_all[rows, cheap]  # 0: padding
        host, s_host = front, front_s  # every frontier level may carry the serial part
        if hosts is not None and front.shape[1] > hosts:
            F, C = front.shape[1], cheap.shape[1]
            own = np.concatenate((front[:, :, None], np.broadcast_to(cheap[:, None, :], (J, F, C))), axis=2)
            own_s = np.concatenate((front_s[:, :, None], np.broadcast_to(cheap_s[:, None, :], (J, F, C))), axis=2)
            rated = self._single_level(jobs, sigma, pi, front, front_s, own, own_s)
            pick = np.argsort(-rated.reshape(J, F, -1).max(axis=2), axis=1, kind="stable")[:, :hosts]
            host, s_host = front[rows, pick], front_s[rows, pick]
        H = host.shape[1]
        pool, pool_s = np.concatenate((front, cheap), axis=1), np.concatenate((front_s, cheap_s), axis=1)
        E = pool.shape[1]
        extra = np.broadcast_to(pool[:, None, :], (J, H, E))  # [J, H, E]
        flat = self._single_level(jobs, sigma, pi, host, s_host, extra, np.broadcast_to(pool_s[:, None, :], (J, H, E)))
        M = flat.shape[1] // (H * E)
        best = flat.argmax(axis=1)
        gains = flat[np.arange(J), best]
        # The spread families cost more: only for the jobs the single-level one found nothing for, and only with
        # the hosts that family rated best.
        spread_gains = np.full(J, -np.inf)
        spread: list[Column | None] = [None] * J
        rest = np.flatnonzero(~(gains > REDUCED_TOL * w))
        if len(rest):
            per_host = flat[rest].reshape(len(rest), H, -1).max(axis=2)
            pick = np.argsort(-per_host, axis=1, kind="stable")[:, : min(SPREAD_HOSTS, H)]
            sub = np.arange(len(rest))[:, None]
            found, columns = self._spread_block(
                jobs[rest], sigma, pi, s_all[rest], host[rest][sub, pick], s_host[rest][sub, pick]
            )
            spread_gains[rest] = found
            for i, column in zip(rest.tolist(), columns, strict=True):
                spread[i] = column
        out: list[tuple[int, Column]] = []
        for i in range(J):
            gain = max(gains[i], spread_gains[i])
            if not np.isfinite(gain) or gain <= REDUCED_TOL * w[i]:
                continue
            spread_column = spread[i]
            if spread_gains[i] > gains[i] and spread_column is not None:
                out.append((int(jobs[i]), spread_column))
                continue
            h, x_e, mm = (int(v) for v in np.unravel_index(best[i], (H, E, M)))
            k, k_extra = int(host[i, h]), int(extra[i, h, x_e])
            allocation = {k: 1}
            if mm:
                allocation[k_extra] = allocation.get(k_extra, 0) + mm
            out.append((int(jobs[i]), tuple(sorted(allocation.items()))))
        return out

    def _single_level(
        self, jobs: np.ndarray, sigma: np.ndarray, pi: np.ndarray, hosts: np.ndarray, s_host: np.ndarray,
        extra: np.ndarray, s_extra: np.ndarray,
    ) -> np.ndarray:
        """[J, H x E x M] the reduced profit of host hosts[j, h] (speed s_host, 0: none) with m = 0 .. M-1 devices
        of level extra[j, h, e] (speed s_extra), -inf where that allocation is not valid."""
        a = self.a
        J = len(jobs)
        maxd = a.max_devices[jobs].astype(np.float64)
        M = int(min(maxd.max(initial=1.0), a.count.max(initial=1)))  # extra devices 0 .. M-1
        m = np.arange(M, dtype=np.float64)
        same = a.level_group[extra] == a.level_group[hosts][:, :, None]
        room = a.count[a.level_group[extra]] - same.astype(np.int64)  # extra devices besides the host
        r = s_host[:, :, None, None] + m * s_extra[..., None]  # [J, H, E, M]
        pp = a.p[jobs][:, None, None, None]
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
            valid &= meets_deadline(self.a, jobs, S)
        # m = 0 is the same column whatever the extra level: keep it once.
        valid[:, :, 1:, 0] = False
        reduced = (
            a.weight[jobs][:, None, None, None] * S - pi[hosts][:, :, None, None] - m * pi[extra][..., None]
            - sigma[jobs][:, None, None, None]
        )
        return np.where(valid, reduced, -np.inf).reshape(J, -1)

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
            best_columns = [c if b else old for c, b, old in zip(columns, better, best_columns, strict=True)]
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
        slowest = np.nan_to_num(speed, nan=np.inf).argmin(axis=2)[:, None, :]
        pick = np.where(fits.any(axis=3), key.argmax(axis=3), slowest)
        return levels[np.arange(levels.shape[0])[None, None, :], pick]

    def _spread(
        self, jobs, sigma, pi, s_all, hosts, s_host, level_of, fastest_first: bool
    ) -> tuple[np.ndarray, list[Column | None]]:
        a = self.a
        J, H = hosts.shape
        G = len(a.count)
        s_per_host = np.broadcast_to(s_all[:, None, :], (J, H, s_all.shape[1]))
        sg = np.take_along_axis(s_per_host, level_of.reshape(J, H, G), axis=2)
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
            valid &= meets_deadline(self.a, jobs, S)
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


def frontier(a: Arrays, s_all: np.ndarray, pi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per job, the eligible levels that no other level beats on both speed and price (the larger group
    first among equals): any allocation's host and devices can be swapped for frontier ones at no loss but
    the room in their groups. ([J, F] level indices, [J, F] mask of real entries.)"""
    J, K = s_all.shape
    count = a.count[a.level_group].astype(np.float64)
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


# The BlockPricer of a pricing worker process, set once by its initializer.
_WORKER_PRICER: BlockPricer | None = None


def _start_worker(a: Arrays) -> None:
    global _WORKER_PRICER
    _WORKER_PRICER = BlockPricer(a)


def _price_in_worker(
    blocks: list[np.ndarray], sigma: np.ndarray, pi: np.ndarray, hosts: int | None
) -> list[list[tuple[int, Column]]]:
    if _WORKER_PRICER is None:
        raise RuntimeError("pricing worker not started")
    return [_WORKER_PRICER.price_block(jobs, sigma, pi, hosts) for jobs in blocks]
