"""The heterogeneous Amdahl law and its tangent planes (pure formulas, shared by model and extraction)."""

from __future__ import annotations

import math


def speedup(p: float, s_host: float, r: float) -> float:
    """S = 1 / ((1 - p) / s_host + p / R): serial part on the host, parallel part over aggregate speed R."""
    if s_host <= 0 or r <= 0:
        return 0.0
    return 1.0 / ((1.0 - p) / s_host + p / r)


def tangent_point(p: float, s_host: float, r: float) -> float:
    """t = X / (X + Y) with X = s_host / (1 - p), Y = R / p: where the tangent S <= (1-t)^2 X + t^2 Y touches."""
    x, y = s_host / (1.0 - p), r / p
    return x / (x + y)


def initial_tangent_points(p: float, max_ratio: float, growth: float = 1.6) -> list[float]:
    """Tangent points for R / s_host = k on a geometric grid 1 .. max_ratio: t(k) = p / (p + k (1 - p))."""
    points, k = [], 1.0
    while True:
        points.append(p / (p + k * (1.0 - p)))
        if k >= max_ratio:
            return points
        k = min(k * growth, max_ratio)


def is_finite_positive(x: float) -> bool:
    return math.isfinite(x) and x > 0
