"""Quasi-birth-death chains solved by the matrix-geometric method: what the exact engine (optsched.queueing.exact)
uses so that the lowest priority level's queue needs no truncation.

A QBD has a boundary level 0 (m0 phases) and levels n >= 1 of m phases whose transitions do not depend on n:
A0 up (n -> n+1), A1 within (diagonal included), A2 down (n -> n-1, n >= 2); B00, B01 from level 0, B10 from
level 1 down to 0. Stationary law (Neuts 1981): pi_{n+1} = pi_n R for n >= 1, R the minimal solution of
A0 + R A1 + R^2 A2 = 0, got as R = A0 (-(A1 + A0 G))^-1 from G (the first-passage matrix down one level, the
minimal solution of A2 + A1 G + A0 G^2 = 0), computed by logarithmic reduction (Latouche & Ramaswami 1993: the
iterations double the levels covered, so about log2 of the busy period's length in levels). The boundary solves
pi0 B00 + pi1 B10 = 0, pi0 B01 + pi1 (A1 + R A2) = 0 with pi0 1 + pi1 (I - R)^-1 1 = 1.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

# Logarithmic reduction stops when G is stochastic to this tolerance (every row of G sums to 1 when stable).
G_TOL = 1e-13
MAX_STEPS = 60


class NotConverged(Exception):
    """The reduction did not reach a stochastic G (an unstable or nearly unstable chain)."""


@dataclass(frozen=True)
class Blocks:
    """The QBD's generator blocks (rates per hour): see the module's docstring."""

    B00: np.ndarray
    B01: np.ndarray
    B10: np.ndarray
    A0: np.ndarray
    A1: np.ndarray
    A2: np.ndarray


@dataclass(frozen=True)
class QbdSolution:
    """pi0 (level 0), pi1 (level 1), R; the per-phase mass of all levels >= 1 and their mean level."""

    pi0: np.ndarray
    pi1: np.ndarray
    R: np.ndarray

    @property
    def upper(self) -> np.ndarray:
        """sum_{n >= 1} pi_n = pi1 (I - R)^-1 (per phase)."""
        m = self.R.shape[0]
        return np.asarray(np.linalg.solve((np.eye(m) - self.R).T, self.pi1))

    @property
    def mean_level(self) -> float:
        """sum_{n >= 1} n pi_n 1 = pi1 (I - R)^-2 1."""
        m = self.R.shape[0]
        once = np.linalg.solve(np.eye(m) - self.R, np.ones(m))
        return float(self.pi1 @ np.linalg.solve(np.eye(m) - self.R, once))


def first_passage(A0: np.ndarray, A1: np.ndarray, A2: np.ndarray, deadline: float | None = None) -> np.ndarray:
    """G by logarithmic reduction (Latouche & Ramaswami 1993); NotConverged past MAX_STEPS doublings or past the
    deadline (time.monotonic(), checked each doubling: one costs about 10 m^3 flops, seconds at 1,000 phases)."""
    m = A1.shape[0]
    eye = np.eye(m)
    inverse = np.linalg.inv(-A1)
    up, down = inverse @ A0, inverse @ A2
    G, T = down.copy(), up.copy()
    for doubling in range(MAX_STEPS):
        U = up @ down + down @ up
        step = np.linalg.inv(eye - U)
        up, down = step @ (up @ up), step @ (down @ down)
        G = G + T @ down
        T = T @ up
        if np.max(np.abs(1.0 - G.sum(axis=1))) < G_TOL:
            return G
        if deadline is not None and time.monotonic() > deadline:
            raise NotConverged(f"past the time limit after {doubling + 1} doublings, at {m:,} phases")
    error = np.max(np.abs(1.0 - G.sum(axis=1)))
    raise NotConverged(f"G not stochastic after {MAX_STEPS} doublings (error {error:.1e})")


def solve_qbd(blocks: Blocks, deadline: float | None = None) -> QbdSolution:
    """The stationary law of a positive-recurrent QBD (see the module's docstring); NotConverged past the deadline."""
    b = blocks
    G = first_passage(b.A0, b.A1, b.A2, deadline)
    R = b.A0 @ np.linalg.inv(-(b.A1 + b.A0 @ G))
    m0, m = b.B00.shape[0], b.A1.shape[0]
    # [pi0 pi1] M = 0 with M = [[B00, B01], [B10, A1 + R A2]]; one equation replaced by the normalisation.
    M = np.block([[b.B00, b.B01], [b.B10, b.A1 + R @ b.A2]])
    norm = np.concatenate([np.ones(m0), np.linalg.solve(np.eye(m) - R, np.ones(m))])
    M[:, 0] = norm
    rhs = np.zeros(m0 + m)
    rhs[0] = 1.0
    x = np.linalg.solve(M.T, rhs)
    x = np.clip(x, 0.0, None)
    x /= x @ norm
    return QbdSolution(pi0=x[:m0], pi1=x[m0:], R=R)
