"""The exact engine: priority classes on c identical servers as a continuous-time Markov chain, solved numerically.

Model: Poisson arrivals per class; phase-type service (optsched.queueing.phasetype: the class's declared law);
priority levels served highest first; FCFS within a level; non-preemptive, or preemptive-resume (a preempted job
keeps its phase and resumes before any job of its level that has not started, since it is older).

State: per level l the jobs waiting that have not started (q_l); per service phase g (every class's phases) the
jobs in service in that phase (s_g, sum <= c) and, preemptive, the jobs preempted in that phase (p_g). The classes
of one level are one merged class whose law is the rate-weighted mixture of theirs: an unstarted job's class is
drawn at arrival independently of everything else, so a level's unstarted jobs split by class in proportion to
the arrival rates, and per-class figures stay exact (Little: T_k = L_k / lambda_k).

Preemption: an arrival of level l that finds every server busy preempts a job of the lowest level in service if
that level is below l; the job preempted is drawn uniformly among that level's jobs in service, and a freed server
resumes one drawn uniformly among the highest level's preempted jobs (with exponential service the draw changes
nothing; with other laws it is this engine's rule within a level, stated because it is not FCFS among the
started jobs of one level). Class l sees only levels 0..l, so the preemptive engine solves the chain of levels
0..l for the lowest l it can, and each level takes its figures from the smallest chain that holds it.

Truncation: level l holds at most N_l jobs (arrivals beyond are lost); N_l is first chosen from the
approximation's mean number in system n as the point where a geometric law of mean n keeps less than TAIL mass
beyond, and extended (by the tail's measured decay, `_extended`) while the truncation takes more than
`max_tail_share` of a level's mean number in system. Per level the truncated mass is estimated as
M_l = P(N_l) / (1 - r_l), r_l = (P(N_l) / P(N_l - k))^(1/k), k = N_l / 4 (the geometric tail the queue has far
out), and what it takes from the mean number as M_l (N_l + r_l / (1 - r_l)); the masses' sum is reported. A chain
whose estimated size (`_Chain.estimated_states`) is above the budget is not built; a QBD is built unless its
estimated phases are above OVERCOUNT times the limit, and stops when its counted phases pass the limit. The chain
is built breadth-first from the empty state and solved with a sparse LU (scipy.sparse.linalg.splu) with one balance
equation replaced by the normalisation; building stops past `max_states` states or `time_s` seconds (the LU
itself is not interrupted), and the caller then uses the approximation, saying so.

Reach: preemptive, class k is exact when the chain of levels 0..k fits: its QBD phases are the higher levels'
truncated counts times the ways of filling the c servers and of holding up to c preempted jobs, by phase. Where it
does not fit (the 3-class, 16-device study of bench/queueing.py, two-phase laws: its middle class's QBD has 53,958
phases a level even with the high count bounded at 17 (the engine starts at 62), a dense matrix of 23 GB, against
a limit of 1,500), the class keeps the labelled approximation and the label gives both refusals. Non-preemptive,
every class sees every level (a lower job holds its server to the end), so one chain of all levels serves all
classes or none.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import csc_matrix
from scipy.sparse.linalg import splu
from threadpoolctl import threadpool_limits

from optsched.queueing.analytic import ClassMeans, QueueClass, mean_times
from optsched.queueing.phasetype import PhaseType, phase_type
from optsched.queueing.qbd import Blocks, NotConverged, solve_qbd
from optsched.queueing.schema import Discipline

logger = logging.getLogger(__name__)

EXACT_CTMC = "exact: CTMC, phase-type service ({law}), truncated mass {mass:.1e}"
EXACT_QBD = "exact: matrix-geometric (QBD), phase-type service ({law}), truncated mass {mass:.1e}"
# The lowest level of a QBD chain has no bound: a count no state reaches.
UNBOUNDED = 10**9
# Geometric-tail guess of the first truncation: keep about this mass beyond N_l.
TAIL = 1e-6
# A retry extends a level's truncation by its measured geometric tail, at most this many times.
GROWTH = 4.0
RETRIES = 4
# A QBD whose estimated phases (`_Chain.estimated_phases`) are within this factor of the limit is built and its
# phases counted: on 2 servers the estimate was 1.7x the count (hyperexponential, preemptive).
OVERCOUNT = 8.0


@dataclass(frozen=True)
class ExactBudget:
    """What the exact engine may spend: states of one chain, seconds of one evaluation (all its chains),
    seconds of each of a study's two exact phases (the cap choice, then the front), and the truncation it accepts
    (the truncated part of each level's mean number in system, at most max_tail_share of it)."""

    max_states: int = 50_000
    time_s: float = 10.0
    study_s: float = 20.0
    max_tail_share: float = 1e-4
    # The QBD's phases per level (dense matrices: the reduction costs about 10 m^3 flops a doubling); False: the
    # truncated chain only (the tests' cross-check).
    max_phases: int = 1_500
    matrix_geometric: bool = True


@dataclass(frozen=True)
class ChainResult:
    """Per-level-chain figures: per class (input order of the chain's classes) the mean number in system and
    mean servers busy; the truncated mass; the chain's states."""

    number: tuple[float, ...]
    busy: tuple[float, ...]
    accepted: tuple[float, ...]  # fraction of each class's arrivals admitted (1 - blocking at N_l)
    truncated_mass: float
    states: int
    method: str = EXACT_CTMC


class TooLarge(Exception):
    """The chain would exceed the budget (states or time)."""


@dataclass
class _Clock:
    deadline: float
    spent_states: int = 0
    reasons: list[str] = field(default_factory=list)


def best_means(
    classes: Sequence[QueueClass], c: int, discipline: Discipline, budget: ExactBudget | None = None
) -> tuple[ClassMeans, ...]:
    """Per class: the closed form where one is exact, else the exact engine within the budget, else the
    approximation, labelled with why and its measured error (ValueError when unstable)."""
    fast = mean_times(classes, c, discipline)
    budget = budget or ExactBudget()
    needs = [i for i, m in enumerate(fast) if not m.detail.startswith("exact")]
    if not needs:
        return fast
    clock = _Clock(deadline=time.monotonic() + budget.time_s)
    solved = _exact(classes, c, discipline, fast, budget, clock)
    out = []
    for i, m in enumerate(fast):
        if m.detail.startswith("exact"):
            out.append(m)
        elif i in solved:
            out.append(solved[i])
        else:
            why = clock.reasons[-1] if clock.reasons else "no phase-type law"
            out.append(
                ClassMeans(
                    wait=m.wait, response=m.response, detail=f"{m.detail}; {APPROXIMATION_ERROR}; exact engine: {why}"
                )
            )
    return tuple(out)


def exact_means(
    classes: Sequence[QueueClass], c: int, discipline: Discipline, budget: ExactBudget | None = None
) -> dict[int, ClassMeans]:
    """The exact engine alone (no closed form first): index -> means of every class the budget reaches."""
    budget = budget or ExactBudget()
    clock = _Clock(deadline=time.monotonic() + budget.time_s)
    return _exact(classes, c, discipline, mean_times(classes, c, discipline), budget, clock)


# The approximation's error as issue 29 measured it (32 studies, 2-3 classes on 4-16 devices, loads 0.5-0.95, scv
# 0.5-4, against an exact chain); `python -m bench.queueing` re-measures it against this engine.
APPROXIMATION_ERROR = (
    "error measured in issue 29 against an exact chain: median 1 % on response, up to 26 % on response and 73 % on "
    "wait at scv 4"
)


def _exact(
    classes: Sequence[QueueClass], c: int, discipline: Discipline, fast: Sequence[ClassMeans],
    budget: ExactBudget, clock: _Clock,
) -> dict[int, ClassMeans]:
    """Exact means of every class the budget reaches (index -> means)."""
    laws = [phase_type(k.law, k.mean, k.scv) for k in classes]
    if any(ph is None for ph in laws):
        clock.reasons.append("a constant work (scv 0) has no phase-type law")
        return {}
    levels = sorted({k.level for k in classes})
    chains = [levels[: i + 1] for i in range(len(levels))] if discipline == Discipline.preemptive else [levels]
    out: dict[int, ClassMeans] = {}
    for upto in chains:
        members = [i for i, k in enumerate(classes) if k.level in upto]
        args = ([classes[i] for i in members], [laws[i] for i in members], c, discipline, [fast[i] for i in members])
        try:
            # One BLAS thread: the QBD's dense products are small, and with a thread per core they slowed 2-16x
            # beside two busy processes on 2 cores (measured; the same time on an idle machine).
            with threadpool_limits(limits=1, user_api="blas"):
                result = _solved(*args, budget, clock)  # type: ignore[arg-type]
        except TooLarge as exc:
            clock.reasons.append(str(exc))
            break
        for pos, i in enumerate(members):
            k = classes[i]
            if i in out and k.level != upto[-1]:
                continue
            response = result.number[pos] / (k.rate * result.accepted[pos])
            out[i] = ClassMeans(
                wait=response - k.mean,
                response=response,
                detail=result.method.format(law=k.law.value, mass=result.truncated_mass),
                number_in_system=result.number[pos],
                truncated_mass=result.truncated_mass,
            )
    return out


def _solved(
    classes: Sequence[QueueClass], laws: Sequence[PhaseType], c: int, discipline: Discipline,
    guess: Sequence[ClassMeans], budget: ExactBudget, clock: _Clock,
) -> ChainResult:
    """The QBD when the budget allows it, else the truncated chain (the reason logged)."""
    if not budget.matrix_geometric:
        return solve_chain(classes, laws, c, discipline, guess, budget, clock)
    try:
        return solve_chain(classes, laws, c, discipline, guess, budget, clock, qbd=True)
    except TooLarge as exc:
        logger.debug("QBD refused (%s): the truncated chain instead", exc)
        refused = str(exc)
    try:
        return solve_chain(classes, laws, c, discipline, guess, budget, clock)
    except TooLarge as exc:
        # Both reasons: the label says why neither exact method fits (the QBD's phases, the chain's states).
        raise TooLarge(f"{refused}; the truncated chain: {exc}") from exc


def solve_chain(
    classes: Sequence[QueueClass], laws: Sequence[PhaseType], c: int, discipline: Discipline,
    guess: Sequence[ClassMeans], budget: ExactBudget, clock: _Clock, *, qbd: bool = False,
) -> ChainResult:
    """The chain of these classes, its truncation grown until the truncated mass is within the budget; qbd: the
    lowest level unbounded, solved by the matrix-geometric method (only the higher levels truncated)."""
    levels = sorted({k.level for k in classes})
    mean_number = [
        sum(k.rate * g.response for k, g in zip(classes, guess, strict=True) if k.level == lv) for lv in levels
    ]
    bounds = [max(c + 2, _geometric_bound(n)) for n in mean_number]
    for _ in range(RETRIES + 1):
        if time.monotonic() > clock.deadline:
            raise TooLarge(f"the exact engine's {budget.time_s:g} s were spent (bounds {bounds})")
        if qbd:
            bounds[-1] = UNBOUNDED
        chain = _Chain(classes, laws, c, discipline, bounds)
        if qbd:
            # The estimate overcounts the phases (up to 2x on 2 servers); the building counts them exactly and
            # stops at the limit, so only a hopeless estimate refuses without building.
            phases = chain.estimated_phases()
            limit = min(budget.max_phases, budget.max_states)
            if phases > OVERCOUNT * limit:
                raise TooLarge(f"the QBD would have about {phases:.2g} phases a level, above {limit:,}")
            result, tails, ratios = chain.solve_qbd(budget, clock)
        else:
            estimate = chain.estimated_states()
            if estimate > budget.max_states:
                raise TooLarge(f"the chain would have about {estimate:.2g} states, above {budget.max_states:,}")
            result, tails, ratios = chain.solve(budget, clock)
        level_numbers = [
            sum(n for n, k in zip(result.number, classes, strict=True) if k.level == lv) for lv in levels
        ]
        allowed = [budget.max_tail_share * max(n, 1e-12) for n in level_numbers]
        if all(t <= a for t, a in zip(tails, allowed, strict=True)):
            return result
        bounds = [_extended(b, t, a, r) for b, t, a, r in zip(bounds, tails, allowed, ratios, strict=True)]
    raise TooLarge(f"the truncation still cuts too much of the queue after {RETRIES} retries (bounds {bounds})")


def _extended(bound: int, tail: float, allowed: float, ratio: float) -> int:
    """The bound whose geometric tail (ratio r per job, measured at the old bound) is within `allowed`: the old
    one plus log(allowed / tail) / log(r), a fifth more for the tail's slower start; at most GROWTH times more."""
    if tail <= allowed:
        return bound
    if 0.0 < ratio < 1.0:
        more = math.log(allowed / tail) / math.log(ratio)
        return min(int(bound + 1.2 * more) + 1, int(bound * GROWTH) + 1)
    return int(bound * GROWTH) + 1


def _geometric_bound(mean: float) -> int:
    """N with P(X >= N) = TAIL for X geometric on 0, 1, ... with this mean."""
    if mean <= 0:
        return 1
    r = mean / (1.0 + mean)
    return int(math.ceil(math.log(TAIL) / math.log(r)))


class _Chain:
    """The truncated chain of a set of classes (see the module's docstring for the state)."""

    def __init__(
        self, classes: Sequence[QueueClass], laws: Sequence[PhaseType], c: int, discipline: Discipline,
        bounds: Sequence[int],
    ):
        self.c = c
        self.preemptive = discipline == Discipline.preemptive
        self.levels = sorted({k.level for k in classes})
        self.L = len(self.levels)
        self.bounds = list(bounds)
        self.classes = list(classes)
        # Global phases: class k's phases at offsets[k] .. offsets[k] + n_k.
        self.phase_class: list[int] = []
        self.moves: list[list[tuple[int, float]]] = []
        self.exit: list[float] = []
        offsets = []
        for ki, ph in enumerate(laws):
            offsets.append(len(self.phase_class))
            t = ph.exit
            for j in range(ph.phases):
                self.phase_class.append(ki)
                self.exit.append(float(t[j]))
                self.moves.append(
                    [(offsets[ki] + jj, float(ph.T[j, jj])) for jj in range(ph.phases) if jj != j and ph.T[j, jj] > 0]
                )
        self.P = len(self.phase_class)
        self.phase_level = [self.levels.index(classes[k].level) for k in self.phase_class]
        self.level_phases = [[g for g in range(self.P) if self.phase_level[g] == lv] for lv in range(self.L)]
        self.rate = [sum(k.rate for k in classes if k.level == lv) for lv in self.levels]
        self.start: list[list[tuple[int, float]]] = []
        for li, lv in enumerate(self.levels):
            starts = []
            for ki, (k, ph) in enumerate(zip(classes, laws, strict=True)):
                if k.level == lv:
                    for j in range(ph.phases):
                        if ph.alpha[j] > 0:
                            starts.append((offsets[ki] + j, k.rate / self.rate[li] * float(ph.alpha[j])))
            self.start.append(starts)

    def estimated_states(self) -> float:
        """About the chain's states, before building it: every way of filling the c servers (multisets of c
        among the P phases; preemptive: times the multisets of at most c preempted jobs among the lower levels'
        phases) times the waiting jobs, about half of each level's bound."""
        configs = math.comb(self.c + self.P - 1, self.P - 1)
        if self.preemptive:
            lower = self.P - len(self.level_phases[0])
            configs *= math.comb(self.c + lower, lower)
        return configs * math.prod(b / 2 + 1 for b in self.bounds)

    def estimated_phases(self) -> float:
        """About the QBD's phases a level: the chain's states without the lowest level's waiting count."""
        return self.estimated_states() / (self.bounds[-1] / 2 + 1)

    # State layout: q (L), s (P), p (P, preemptive only).
    def _total(self, state: tuple[int, ...], lv: int) -> int:
        L, P = self.L, self.P
        n = state[lv] + sum(state[L + g] for g in self.level_phases[lv])
        if self.preemptive:
            n += sum(state[L + P + g] for g in self.level_phases[lv])
        return n

    def _next_job(self, s: list[int], rate: float, out: list[tuple[tuple[int, ...], float]]) -> None:
        """A server was freed in state s (mutable copy): the highest waiting job starts (or it idles)."""
        L, P = self.L, self.P
        for lv in range(L):
            if self.preemptive:
                waiting = [g for g in self.level_phases[lv] if s[L + P + g] > 0]
                if waiting:
                    total = sum(s[L + P + g] for g in waiting)
                    for g in waiting:
                        t = list(s)
                        t[L + P + g] -= 1
                        t[L + g] += 1
                        out.append((tuple(t), rate * s[L + P + g] / total))
                    return
            if s[lv] > 0:
                for g, pr in self.start[lv]:
                    t = list(s)
                    t[lv] -= 1
                    t[L + g] += 1
                    out.append((tuple(t), rate * pr))
                return
        out.append((tuple(s), rate))

    def transitions(self, state: tuple[int, ...]) -> list[tuple[tuple[int, ...], float]]:
        L, P, c = self.L, self.P, self.c
        out: list[tuple[tuple[int, ...], float]] = []
        busy = sum(state[L : L + P])
        for lv in range(L):
            if self._total(state, lv) >= self.bounds[lv]:
                continue
            lam = self.rate[lv]
            if busy < c:
                for g, pr in self.start[lv]:
                    t = list(state)
                    t[L + g] += 1
                    out.append((tuple(t), lam * pr))
                continue
            victim_level = max(self.phase_level[g] for g in range(P) if state[L + g] > 0)
            if self.preemptive and victim_level > lv:
                victims = [g for g in self.level_phases[victim_level] if state[L + g] > 0]
                n = sum(state[L + g] for g in victims)
                for v in victims:
                    for g, pr in self.start[lv]:
                        t = list(state)
                        t[L + v] -= 1
                        t[L + P + v] += 1
                        t[L + g] += 1
                        out.append((tuple(t), lam * pr * state[L + v] / n))
                continue
            t = list(state)
            t[lv] += 1
            out.append((tuple(t), lam))
        for g in range(P):
            n = state[L + g]
            if n == 0:
                continue
            for gg, r in self.moves[g]:
                t = list(state)
                t[L + g] -= 1
                t[L + gg] += 1
                out.append((tuple(t), n * r))
            if self.exit[g] > 0:
                t = list(state)
                t[L + g] -= 1
                self._next_job(t, n * self.exit[g], out)
        return out

    def _level_totals(self, arr: np.ndarray) -> np.ndarray:
        """Per state (rows of `arr`) and level, the level's jobs in system: waiting, in service and preempted."""
        L, P = self.L, self.P
        totals = np.zeros((len(arr), L), dtype=np.int64)
        for lv in range(L):
            cols_lv = [lv] + [L + g for g in self.level_phases[lv]]
            if self.preemptive:
                cols_lv += [L + P + g for g in self.level_phases[lv]]
            totals[:, lv] = arr[:, cols_lv].sum(axis=1)
        return totals

    def _class_counts(self, arr: np.ndarray, ki: int) -> tuple[np.ndarray, np.ndarray]:
        """Per state, class ki's jobs in service and its jobs started (in service or preempted)."""
        L, P = self.L, self.P
        mine = [g for g in range(P) if self.phase_class[g] == ki]
        in_service = arr[:, [L + g for g in mine]].sum(axis=1)
        started = in_service + (arr[:, [L + P + g for g in mine]].sum(axis=1) if self.preemptive else 0)
        return in_service, started

    def solve(self, budget: ExactBudget, clock: _Clock) -> tuple[ChainResult, list[float], list[float]]:
        """The stationary law of the truncated chain and its figures; TooLarge past the budget."""
        width = self.L + self.P * (2 if self.preemptive else 1)
        empty = (0,) * width
        index = {empty: 0}
        states = [empty]
        rows: list[int] = []
        cols: list[int] = []
        vals: list[float] = []
        i = 0
        while i < len(states):
            if i % 2048 == 0 and time.monotonic() > clock.deadline:
                raise TooLarge(
                    f"the chain took longer than the engine's {budget.time_s:g} s (at {len(states):,} states)"
                )
            for target, r in self.transitions(states[i]):
                if target == states[i]:
                    continue
                j = index.get(target)
                if j is None:
                    j = len(states)
                    if j >= budget.max_states:
                        raise TooLarge(f"the chain has more than {budget.max_states:,} states (bounds {self.bounds})")
                    index[target] = j
                    states.append(target)
                rows.append(i)
                cols.append(j)
                vals.append(r)
            i += 1
        n = len(states)
        clock.spent_states += n
        pi = _stationary(n, rows, cols, vals)
        arr = np.array(states, dtype=np.int64)
        L = self.L
        number = []
        busy = []
        accepted = []
        totals = self._level_totals(arr)
        for ki, k in enumerate(self.classes):
            lv = self.levels.index(k.level)
            share = k.rate / self.rate[lv]
            in_service, started = self._class_counts(arr, ki)
            number.append(float(pi @ (started + share * arr[:, lv])))
            busy.append(float(pi @ in_service))
            accepted.append(1.0 - float(pi[totals[:, lv] >= self.bounds[lv]].sum()))
        tails: list[float] = []
        masses: list[float] = []
        ratios: list[float] = []
        for lv in range(L):
            at = float(pi[totals[:, lv] == self.bounds[lv]].sum())
            # The decay per job over the last quarter of the range (one step alone is distorted by the blocking
            # at the bound).
            span = max(1, self.bounds[lv] // 4)
            before = float(pi[totals[:, lv] == self.bounds[lv] - span].sum())
            ratio = min((at / before) ** (1.0 / span), 0.999999) if before > 0 else 0.0
            mass = at / (1.0 - ratio)
            masses.append(mass)
            ratios.append(ratio)
            # E[X; X >= N] of the geometric tail: what the truncation takes from the level's mean number.
            tails.append(mass * (self.bounds[lv] + ratio / (1.0 - ratio)))
        logger.debug("exact chain: %d states, bounds %s, tails %s", n, self.bounds, tails)
        result = ChainResult(
            number=tuple(number), busy=tuple(busy), accepted=tuple(accepted), truncated_mass=sum(masses), states=n
        )
        return result, tails, ratios


    def solve_qbd(self, budget: ExactBudget, clock: _Clock) -> tuple[ChainResult, list[float], list[float]]:
        """The chain as a QBD whose level is the lowest level's count of unstarted jobs (optsched.queueing.qbd):
        with one waiting every server is busy, so from level 1 up the moves do not depend on the level (an arrival
        of the lowest level adds one; a server freed with no higher job to start takes one). A phase is the state
        without that count; the phases are closed over the moves from the boundary (level 0), level 1 and
        level 2, which stands for every level from 2 up. TooLarge past the budget or without convergence."""
        low = self.L - 1
        limit = min(budget.max_phases, budget.max_states)
        empty = (0,) * (self.L + self.P * (2 if self.preemptive else 1))
        sets: tuple[dict[tuple[int, ...], int], dict[tuple[int, ...], int]] = ({empty: 0}, {})
        # Moves per (set, phase): (target set, target phase, level change, rate); set 1's taken at level 2.
        moves: tuple[list[list[tuple[int, int, int, float]]], list[list[tuple[int, int, int, float]]]] = ([], [])
        down: list[list[tuple[int, float]]] = []  # set 1 at level 1: moves to level 0
        work = [(0, empty)]
        while work:
            if time.monotonic() > clock.deadline:
                raise TooLarge(f"the QBD took longer than the engine's {budget.time_s:g} s")
            side, phase = work.pop()
            state = list(phase)
            state[low] = 0 if side == 0 else 2
            out = []
            for target, r in self.transitions(tuple(state)):
                if target == tuple(state):
                    continue
                q = target[low]
                key = target[:low] + (0,) + target[low + 1 :]
                to = 0 if side == 0 and q == 0 else 1
                j = self._phase(sets, to, key, work, limit)
                out.append((to, j, q - state[low], r))
            row = [(to, j, dq, r) for to, j, dq, r in out]
            if side == 0:
                moves[0].extend([[]] * (sets[0][phase] + 1 - len(moves[0])))
                moves[0][sets[0][phase]] = row
                continue
            moves[1].extend([[]] * (sets[1][phase] + 1 - len(moves[1])))
            moves[1][sets[1][phase]] = row
            state[low] = 1
            drops = []
            for target, r in self.transitions(tuple(state)):
                if target[low] == 0:
                    key = target[:low] + (0,) + target[low + 1 :]
                    drops.append((self._phase(sets, 0, key, work, limit), r))
            down.extend([[]] * (sets[1][phase] + 1 - len(down)))
            down[sets[1][phase]] = drops
        m0, m = len(sets[0]), len(sets[1])
        clock.spent_states += m0 + m
        if time.monotonic() > clock.deadline:
            # Not started past the deadline; once started, the reduction stops at the first doubling past it.
            raise TooLarge(f"the QBD took longer than the engine's {budget.time_s:g} s (at {m:,} phases a level)")
        B00, B01, B10 = np.zeros((m0, m0)), np.zeros((m0, m)), np.zeros((m, m0))
        A0, A1, A2 = np.zeros((m, m)), np.zeros((m, m)), np.zeros((m, m))
        for i, row in enumerate(moves[0]):
            for to, j, _, r in row:
                (B00 if to == 0 else B01)[i, j] += r
        for i, row in enumerate(moves[1]):
            for _, j, dq, r in row:
                (A0 if dq > 0 else A2 if dq < 0 else A1)[i, j] += r
        for i, drops in enumerate(down):
            for j, r in drops:
                B10[i, j] += r
        B00 -= np.diag(B00.sum(axis=1) + B01.sum(axis=1))
        A1 -= np.diag(A1.sum(axis=1) + A0.sum(axis=1) + A2.sum(axis=1))
        try:
            solution = solve_qbd(Blocks(B00=B00, B01=B01, B10=B10, A0=A0, A1=A1, A2=A2), clock.deadline)
        except (NotConverged, np.linalg.LinAlgError) as exc:
            raise TooLarge(f"the QBD did not solve: {exc}") from exc
        arr = np.array(list(sets[0]) + list(sets[1]), dtype=np.int64)
        weight = np.concatenate([solution.pi0, solution.upper])
        mean_low = solution.mean_level
        L = self.L
        totals = self._level_totals(arr)
        number, busy, accepted = [], [], []
        for ki, k in enumerate(self.classes):
            lv = self.levels.index(k.level)
            share = k.rate / self.rate[lv]
            in_service, started = self._class_counts(arr, ki)
            waiting = mean_low if lv == low else float(weight @ arr[:, lv])
            number.append(float(weight @ started) + share * waiting)
            busy.append(float(weight @ in_service))
            accepted.append(1.0 if lv == low else 1.0 - float(weight[totals[:, lv] >= self.bounds[lv]].sum()))
        tails, masses, ratios = [0.0] * L, [0.0] * L, [0.0] * L
        for lv in range(low):
            at = float(weight[totals[:, lv] == self.bounds[lv]].sum())
            span = max(1, self.bounds[lv] // 4)
            before = float(weight[totals[:, lv] == self.bounds[lv] - span].sum())
            ratios[lv] = min((at / before) ** (1.0 / span), 0.999999) if before > 0 else 0.0
            masses[lv] = at / (1.0 - ratios[lv])
            tails[lv] = masses[lv] * (self.bounds[lv] + ratios[lv] / (1.0 - ratios[lv]))
        logger.debug("QBD: %d + %d phases, bounds %s, tails %s", m0, m, self.bounds[:-1], tails)
        result = ChainResult(
            number=tuple(number), busy=tuple(busy), accepted=tuple(accepted), truncated_mass=sum(masses),
            states=m0 + m, method=EXACT_QBD,
        )
        return result, tails, ratios

    @staticmethod
    def _phase(
        sets: tuple[dict[tuple[int, ...], int], dict[tuple[int, ...], int]], side: int, key: tuple[int, ...],
        work: list[tuple[int, tuple[int, ...]]], limit: int,
    ) -> int:
        """The index of a phase in its set, added (and queued for its moves) when new; TooLarge past the limit."""
        j = sets[side].get(key)
        if j is None:
            j = len(sets[side])
            if j >= limit:
                raise TooLarge(f"the QBD has more than {limit:,} phases a level")
            sets[side][key] = j
            work.append((side, key))
        return j


def _stationary(n: int, rows: list[int], cols: list[int], vals: list[float]) -> np.ndarray:
    """pi with pi Q = 0, sum pi = 1: Q^T pi = 0 with the first equation replaced by the normalisation."""
    r = np.asarray(rows, dtype=np.int64)
    k = np.asarray(cols, dtype=np.int64)
    v = np.asarray(vals, dtype=float)
    out_rate = np.bincount(r, weights=v, minlength=n)
    # Q^T: entry (j, i) = q_ij; diagonal -out_rate; row 0 replaced by ones.
    keep = k != 0
    data = np.concatenate([v[keep], -out_rate[1:], np.ones(n)])
    row_idx = np.concatenate([k[keep], np.arange(1, n), np.zeros(n, dtype=np.int64)])
    col_idx = np.concatenate([r[keep], np.arange(1, n), np.arange(n)])
    A = csc_matrix((data, (row_idx, col_idx)), shape=(n, n))
    b = np.zeros(n)
    b[0] = 1.0
    # Minimum degree on A^T + A: 2-3x less fill than COLAMD on these lattice-like chains (40,000 states: 4.8 s
    # against 11.5 s at load 4).
    pi = np.asarray(splu(A, permc_spec="MMD_AT_PLUS_A").solve(b))
    pi = np.clip(pi, 0.0, None)
    return pi / pi.sum()
