"""Mean waits and responses of priority classes in an M/G/c queue: closed forms where they exist, else one
published approximation. Pure functions of rates, means and scvs (hours); no study, no I/O.

Notation: c servers; class i has Poisson rate lambda_i, service mean m_i and squared coefficient of variation
scv_i, so E[S_i^2] = m_i^2 (1 + scv_i); levels are served highest first (0 = first) and classes of one level in
arrival order. rho_i = lambda_i m_i / c, and sigma_l = sum of rho_i over the levels 0..l (sigma_-1 = 0).

Exact:
- c = 1, non-preemptive (any service distribution): Cobham (1954), "Priority assignment in waiting line
  problems", Journal of the Operations Research Society of America 2(1),
  W_l = R / ((1 - sigma_l-1)(1 - sigma_l)), R = sum_i lambda_i E[S_i^2] / 2 (one level: Pollaczek-Khinchine).
- c = 1, preemptive-resume (any distribution): T_i = (m_i + R_l / (1 - sigma_l)) / (1 - sigma_l-1) with
  R_l = sum over levels 0..l of lambda_j E[S_j^2] / 2 (Conway, Maxwell & Miller 1967, Theory of Scheduling;
  Kleinrock 1976, Queueing Systems vol. 2, ch. 3).
- c > 1, non-preemptive, exponential service with one mean m for all classes: Cobham (1954),
  W_l = C(c, a) m / (c (1 - sigma_l-1)(1 - sigma_l)), C the Erlang C probability of waiting, a = sum lambda_i m
  (one level: the M/M/c Erlang C wait C(c, a) / (c/m - Lambda)).
- c > 1, preemptive, exponential service with one mean m over levels 0..l: levels 0..l together are an M/M/c
  FCFS queue with rate Lambda_l (the lower levels are invisible to them), so by Little's law
  lambda_l T_l = Lambda_l T(Lambda_l) - Lambda_l-1 T(Lambda_l-1), T(L) = m + C(c, L m) m / (c - L m)
  (Buzen & Bondi 1983, "The response times of priority classes under preemptive resume in M/M/m queues",
  Operations Research 31(3)).

Approximation, for c > 1 with another scv or unequal means: Bondi & Buzen (1984), "The response times of priority
classes under preemptive resume in M/G/m queues", ACM SIGMETRICS Performance Evaluation Review 12(3): each class's
delay in the M/G/c queue is its delay in the M/G/1 queue with a c-times faster server under the same discipline,
scaled by the ratio of FCFS mean waits, M/G/c over fast M/G/1. With the M/G/c FCFS wait taken as
Allen-Cunneen's C(c, a) E[S^2] / (2 c E[S] (1 - rho)) (Allen 1990, Probability, Statistics and Queueing Theory,
2nd ed.) the ratio is C(c, a) / rho, independent of the service distribution. Non-preemptive: the whole system's
ratio; preemptive: the ratio of levels 0..l (the only ones class l sees), applied to the delay beyond its own
service. The scaling reproduces every exact case above except the preemptive M/M/c with c > 1 (exact there only
for the top level), which is why that case uses the Buzen-Bondi formula instead.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from optsched.queueing.phasetype import Law
from optsched.queueing.schema import Discipline

EXACT_MMC = "exact: Erlang C (M/M/c)"
EXACT_PK = "exact: Pollaczek-Khinchine (M/G/1)"
EXACT_COBHAM_MG1 = "exact: Cobham (1954), M/G/1 non-preemptive priority"
EXACT_COBHAM_MMC = "exact: Cobham (1954), M/M/c non-preemptive priority with equal service rates"
EXACT_PREEMPTIVE_MG1 = "exact: M/G/1 preemptive-resume priority (Conway, Maxwell & Miller 1967)"
EXACT_PREEMPTIVE_MMC = "exact: Buzen & Bondi (1983), M/M/c preemptive priority with equal service rates"
APPROXIMATION = "approximation: Bondi & Buzen (1984), M/G/1 priority delay scaled by C(c,a)/rho (Allen-Cunneen)"

# Service means within this relative distance are "equal" for the exact M/M/c priority formulas.
EQUAL_MEANS_RTOL = 1e-12


@dataclass(frozen=True, slots=True)
class QueueClass:
    """One class: priority level (0 = served first), Poisson rate (1/h), service mean (h), scv and law (the
    closed forms and the approximation read only the mean and scv; the exact engine and the simulation the law)."""

    level: int
    rate: float
    mean: float
    scv: float
    law: Law = Law.gamma

    @property
    def second_moment(self) -> float:
        return self.mean * self.mean * (1.0 + self.scv)


@dataclass(frozen=True, slots=True)
class ClassMeans:
    """Mean wait and response (hours) of one class, and which formula gave them; the exact engine also gives the
    mean number in system and the probability mass its truncation left out."""

    wait: float
    response: float
    detail: str
    number_in_system: float | None = None
    truncated_mass: float | None = None


def erlang_c(c: int, a: float) -> float:
    """C(c, a): probability that an arrival waits in an M/M/c queue with offered load a < c (Erlang B recursion)."""
    if c < 1 or not 0 < a < c:
        raise ValueError(f"Erlang C needs c >= 1 and 0 < a < c, got c={c}, a={a}")
    b = 1.0
    for n in range(1, c + 1):
        b = a * b / (n + a * b)
    return c * b / (c - a * (1.0 - b))


def offered_load(classes: Sequence[QueueClass]) -> float:
    """a = sum_i lambda_i m_i, in servers."""
    return sum(k.rate * k.mean for k in classes)


def is_stable(classes: Sequence[QueueClass], c: int) -> bool:
    return offered_load(classes) < c


def mean_times(classes: Sequence[QueueClass], c: int, discipline: Discipline) -> tuple[ClassMeans, ...]:
    """Mean wait and response of each class, in input order; ValueError when the load is at or above c."""
    if not classes:
        return ()
    if not is_stable(classes, c):
        raise ValueError(f"offered load {offered_load(classes):g} >= {c} servers: no steady state")
    if discipline == Discipline.preemptive:
        return _preemptive(classes, c)
    return _non_preemptive(classes, c)


def _cumulative_load(classes: Sequence[QueueClass], c: int) -> dict[int, float]:
    """sigma_l: the utilisation of levels 0..l."""
    levels = sorted({k.level for k in classes})
    sigma, total = {}, 0.0
    for level in levels:
        total += sum(k.rate * k.mean for k in classes if k.level == level) / c
        sigma[level] = total
    return sigma


def _higher(sigma: dict[int, float], level: int) -> float:
    """sigma_l-1: the utilisation of the levels above `level`."""
    above = [s for lv, s in sigma.items() if lv < level]
    return max(above) if above else 0.0


def _exponential_equal(classes: Sequence[QueueClass]) -> bool:
    means = [k.mean for k in classes]
    return all(k.scv == 1.0 for k in classes) and all(
        math.isclose(m, means[0], rel_tol=EQUAL_MEANS_RTOL) for m in means
    )


def _non_preemptive(classes: Sequence[QueueClass], c: int) -> tuple[ClassMeans, ...]:
    """W_l = (C(c, a) / rho) R' / ((1 - sigma_l-1)(1 - sigma_l)), R' = sum_i lambda_i E[S_i^2] / (2 c^2)."""
    sigma = _cumulative_load(classes, c)
    a = offered_load(classes)
    rho = a / c
    scale = erlang_c(c, a) / rho
    residual = sum(k.rate * k.second_moment for k in classes) / (2.0 * c * c)
    one_level = len(sigma) == 1
    if c == 1:
        detail = EXACT_PK if one_level else EXACT_COBHAM_MG1
    elif _exponential_equal(classes):
        detail = EXACT_MMC if one_level else EXACT_COBHAM_MMC
    else:
        detail = APPROXIMATION
    out = []
    for k in classes:
        wait = scale * residual / ((1.0 - _higher(sigma, k.level)) * (1.0 - sigma[k.level]))
        out.append(ClassMeans(wait=wait, response=wait + k.mean, detail=detail))
    return tuple(out)


def _preemptive(classes: Sequence[QueueClass], c: int) -> tuple[ClassMeans, ...]:
    """Per level: exact for c = 1 or exponential equal means (Buzen-Bondi 1983), else Bondi-Buzen (1984) scaling."""
    sigma = _cumulative_load(classes, c)
    out = []
    for k in classes:
        visible = [j for j in classes if j.level <= k.level]
        if c > 1 and _exponential_equal(visible):
            response = _mmc_preemptive_response(visible, k.level, c)
            detail = EXACT_MMC if _one_level(visible) else EXACT_PREEMPTIVE_MMC
        else:
            response = _scaled_mg1_preemptive_response(visible, k, c, sigma)
            detail = EXACT_PREEMPTIVE_MG1 if c == 1 else APPROXIMATION
        out.append(ClassMeans(wait=response - k.mean, response=response, detail=detail))
    return tuple(out)


def _one_level(classes: Sequence[QueueClass]) -> bool:
    return len({k.level for k in classes}) == 1


def _mmc_preemptive_response(visible: Sequence[QueueClass], level: int, c: int) -> float:
    """T_l = (Lambda_l T(Lambda_l) - Lambda_l-1 T(Lambda_l-1)) / lambda_l, T(L) = m + C(c, L m) m / (c - L m)."""
    m = visible[0].mean

    def number_in_system(rate: float) -> float:  # L(rate) = rate T(rate), Little's law; 0 for no traffic
        if rate == 0.0:
            return 0.0
        a = rate * m
        return rate * (m + erlang_c(c, a) * m / (c - a))

    upto = sum(k.rate for k in visible)
    above = sum(k.rate for k in visible if k.level < level)
    return (number_in_system(upto) - number_in_system(above)) / (upto - above)


def _scaled_mg1_preemptive_response(
    visible: Sequence[QueueClass], k: QueueClass, c: int, sigma: dict[int, float]
) -> float:
    """T = m + (C(c, c sigma_l) / sigma_l) (T_fast - m / c), T_fast the M/G/1 preemptive-resume response at speed c."""
    s_l, s_above = sigma[k.level], _higher(sigma, k.level)
    residual = sum(j.rate * j.second_moment for j in visible) / (2.0 * c * c)
    t_fast = (k.mean / c + residual / (1.0 - s_l)) / (1.0 - s_above)
    scale = erlang_c(c, c * s_l) / s_l
    return k.mean + scale * (t_fast - k.mean / c)
