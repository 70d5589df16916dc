"""Service laws as phase-type distributions: what the exact engine (optsched.queueing.exact) runs on.

A phase-type law is (alpha, T): a job starts in phase j with probability alpha_j, leaves phase j for phase j' at
rate T[j, j'] (per hour) and completes at rate t_j = -sum_j' T[j, j']. The laws a study may declare
(`work_hours.distribution`), for a mean m and scv s:
- exponential (s = 1): one phase at rate 1/m;
- erlang (s = 1/k, k = 1..MAX_ERLANG_PHASES): k phases in series, each at rate k/m;
- hyperexponential (s >= 1): two parallel phases with balanced means (p1/mu1 = p2/mu2), p1 = (1 + sqrt((s-1)/(s+1)))/2,
  mu1 = 2 p1 / m, mu2 = 2 p2 / m (Whitt 1982; Allen 1990, sec. 3.2);
- gamma (shape 1/s, scale m s; any s > 0): a mixture of two Erlang-n laws of one order n = ceil(1/s) and two rates,
  matching the gamma's first three moments exactly (n = 1 is a two-phase hyperexponential); an integer shape is
  the Erlang law itself. Moments: E[X^k] = theta^k (K)_k, K = 1/s, theta = m s, (x)_k the rising factorial; with
  a_k = E[X^k] / (n)_k the mixture's scales x, y are the atoms of the two-point law with moments 1, a1, a2, a3
  (Prony: x + y = (a3 - a1 a2) / (a2 - a1^2), x y = (x + y) a1 - a2), which exists whenever n >= K.
A constant work (scv 0) has no phase-type law: the exact engine leaves it to the approximation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

# Erlang laws of more phases than this are refused (scv below 1/32); gamma fits of more phases use the approximation.
MAX_ERLANG_PHASES = 32
# scv = 1/k within this relative distance names an Erlang law of k phases.
SCV_RTOL = 1e-6


class Law(StrEnum):
    gamma = "gamma"
    hyperexponential = "hyperexponential"
    erlang = "erlang"
    exponential = "exponential"


@dataclass(frozen=True)
class PhaseType:
    """Initial probabilities alpha (n,) and sub-generator T (n, n), rates per hour."""

    alpha: np.ndarray
    T: np.ndarray

    @property
    def exit(self) -> np.ndarray:
        """t = -T 1: the completion rate out of each phase."""
        return np.asarray(-self.T.sum(axis=1))

    @property
    def phases(self) -> int:
        return len(self.alpha)

    def moment(self, k: int) -> float:
        """E[X^k] = k! alpha (-T)^-k 1."""
        inverse = np.linalg.inv(-self.T)
        return float(math.factorial(k) * self.alpha @ np.linalg.matrix_power(inverse, k) @ np.ones(self.phases))


def law_problem(law: Law, scv: float) -> str | None:
    """Why a law cannot have this scv (None: it can)."""
    if law == Law.exponential and not math.isclose(scv, 1.0, rel_tol=SCV_RTOL):
        return f"an exponential law has scv 1, not {scv:g}; declare gamma or hyperexponential for another scv"
    if law == Law.hyperexponential and scv < 1.0 - SCV_RTOL:
        return f"a hyperexponential law has scv >= 1, not {scv:g}; declare erlang or gamma below 1"
    if law == Law.erlang and erlang_phases(scv) is None:
        return (
            f"an Erlang law of k phases has scv 1/k (k = 1..{MAX_ERLANG_PHASES}), not {scv:g}; "
            "declare gamma for another scv"
        )
    return None


def erlang_phases(scv: float) -> int | None:
    """k when scv = 1/k for an integer k in 1..MAX_ERLANG_PHASES, else None."""
    if scv <= 0:
        return None
    k = round(1.0 / scv)
    if 1 <= k <= MAX_ERLANG_PHASES and math.isclose(scv * k, 1.0, rel_tol=SCV_RTOL):
        return k
    return None


def balanced_p(scv: float) -> float:
    """The first phase's probability of the two-phase hyperexponential with balanced means at this scv (> 1)."""
    return (1.0 + math.sqrt((scv - 1.0) / (scv + 1.0))) / 2.0


def phase_type(law: Law, mean: float, scv: float) -> PhaseType | None:
    """The law's phase-type form (see the module's docstring); None for a constant (scv 0)."""
    if scv <= 0:
        return None
    if law == Law.exponential:
        return _erlang(1, mean)
    if law == Law.erlang:
        k = erlang_phases(scv)
        return None if k is None else _erlang(k, mean)
    if law == Law.hyperexponential:
        if math.isclose(scv, 1.0, rel_tol=SCV_RTOL):
            return _erlang(1, mean)
        p = balanced_p(scv)
        return _mixture(1, (p, 1.0 - p), (mean / (2.0 * p), mean / (2.0 * (1.0 - p))))
    return gamma_fit(mean, scv)


def gamma_fit(mean: float, scv: float) -> PhaseType:
    """A mixture of two Erlang-n laws (n = ceil(1/scv)) with the gamma's first three moments."""
    shape = 1.0 / scv
    k = erlang_phases(scv)
    if k is not None:
        return _erlang(k, mean)
    n = math.ceil(shape)
    theta = mean * scv
    a = [theta**j * _rising(shape, j) / _rising(float(n), j) for j in (1, 2, 3)]
    variance = a[1] - a[0] ** 2
    if variance <= 1e-14 * a[0] ** 2:
        return _erlang(n, mean)
    s = (a[2] - a[0] * a[1]) / variance
    r = s * a[0] - a[1]
    root = math.sqrt(max(s * s - 4.0 * r, 0.0))
    x, y = (s + root) / 2.0, (s - root) / 2.0
    p = (a[0] - y) / (x - y)
    # Each Erlang-n of scale x has mean n x; the mixture's mean is n (p x + (1 - p) y) = n a1 = mean.
    return _mixture(n, (p, 1.0 - p), (n * x, n * y))


def _rising(x: float, k: int) -> float:
    out = 1.0
    for i in range(k):
        out *= x + i
    return out


def _erlang(k: int, mean: float) -> PhaseType:
    return _mixture(k, (1.0,), (mean,))


def _mixture(k: int, weights: tuple[float, ...], means: tuple[float, ...]) -> PhaseType:
    """Erlang-k branches with these weights and means (phases k per branch, in series)."""
    n = k * len(weights)
    alpha = np.zeros(n)
    T = np.zeros((n, n))
    for b, (w, m) in enumerate(zip(weights, means, strict=True)):
        rate = k / m
        alpha[b * k] = w
        for j in range(b * k, (b + 1) * k):
            T[j, j] = -rate
            if j + 1 < (b + 1) * k:
                T[j, j + 1] = rate
    return PhaseType(alpha=alpha, T=T)
