"""The power-speedup frontier: the best weighted speedup for each global power budget, and where it bends."""

from __future__ import annotations

import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from optsched.model.data import ModelData
from optsched.schema.plan import Plan, Status
from optsched.schema.workload import HARD_PRIORITIES, Priority, Workload
from optsched.solve.options import SolveOptions
from optsched.solve.planner import WorkloadSource
from optsched.solve.planner import solve_workload as plan

MIN_POINTS = 12
REFINE_POINTS = 6


class FrontierPoint(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    budget_w: float = Field(description="Global budget this point was planned under, in watts.")
    status: Status
    weighted_speedup: float
    power_w: float = Field(description="Power the plan draws (at most the budget).")
    admitted: int
    hard_deadlines_met: int
    hard_deadlines: int
    gap: float | None


class Frontier(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    workload: str
    points: tuple[FrontierPoint, ...] = Field(description="Sorted by budget; weighted speedup never decreases.")
    least_feasible_w: float | None = Field(description="Least global budget with every hard job placed.")
    saturation_w: float | None = Field(description="Budget past which more power buys nothing.")
    current_budget_w: float | None = Field(description="The workload's own global budget, if any.")
    knee_budget_w: float | None = Field(description="Where the curve bends most (farthest from its chord).")
    solve_seconds: float
    reason: str | None = Field(default=None, description="Why there is no curve, when there is none.")


def frontier(
    source: WorkloadSource,
    budgets: list[float] | None = None,
    *,
    time_limit_s: float | None = None,
    mip_gap: float | None = None,
) -> Frontier:
    """Optimal weighted speedup over global budgets; without `budgets`, from the least feasible budget to
    saturation, at least 12 points, denser where the curve bends. Each point warm-starts from the previous."""
    started = time.monotonic()
    workload = Workload.load(source).model_copy(update={"objective": "weighted_speedup"})
    settings = SolveOptions(time_limit_s=time_limit_s, mip_gap=mip_gap)
    unlimited = _at_budget(workload, None, settings, None)
    if not unlimited.feasible:
        reason = "; ".join(unlimited.diagnosis) or "no plan even without a global budget"
        return _empty(workload, started, reason)
    least = _least_feasible_budget(workload)
    saturation = max(unlimited.power_w, least)
    grid = sorted(set(budgets)) if budgets else _even_grid(least, saturation, MIN_POINTS)
    plans: dict[float, Plan] = {}
    points = _sweep(workload, grid, settings, plans)
    if not budgets and saturation > least:
        points = _refine(workload, points, settings, plans, REFINE_POINTS)
    return Frontier(
        workload=workload.name,
        points=tuple(points),
        least_feasible_w=least,
        saturation_w=saturation,
        current_budget_w=workload.power.budget_w,
        knee_budget_w=knee(points),
        solve_seconds=time.monotonic() - started,
    )


def _least_feasible_budget(workload: Workload) -> float:
    """Least fleet power with the hard jobs placed and the domain budgets kept (the global budget lifted)."""
    from optsched.solve.diagnosis import least_power

    lifted = workload.model_copy(update={"power": workload.power.model_copy(update={"budget_w": None})})
    least = least_power(ModelData(lifted), None, keep_domain_budgets=True)
    return float(least) if least is not None else ModelData(workload).idle_power_w


def _even_grid(low: float, high: float, n: int) -> list[float]:
    if high <= low:
        return [low]
    return [low + (high - low) * i / (n - 1) for i in range(n)]


def _at_budget(workload: Workload, budget: float | None, settings: SolveOptions, previous: Plan | None) -> Plan:
    power = workload.power.model_copy(update={"budget_w": budget})
    return plan(
        workload.model_copy(update={"power": power}), options=settings.replace(warm_start=_allocations(previous))
    )


def _allocations(previous: Plan | None):
    if previous is None or not previous.feasible:
        return None
    return {p.job: {(a.device, a.cap_w): a.count for a in p.allocations} for p in previous.placements if p.admitted}


def _sweep(workload: Workload, grid: list[float], settings, plans: dict[float, Plan]) -> list[FrontierPoint]:
    """Plan each budget in increasing order; a lower budget's plan is feasible at a higher one, so it is the start
    (which also makes the curve monotone: the planner never returns worse than its start)."""
    points, previous = [], None
    for budget in sorted(grid):
        result = _at_budget(workload, budget, settings, previous)
        plans[budget] = result
        points.append(_point(budget, result))
        previous = result if result.feasible else previous
    return points


def _refine(
    workload: Workload, points: list[FrontierPoint], settings, plans: dict[float, Plan], extra: int
) -> list[FrontierPoint]:
    """Add midpoints beside the points that bend most, each warm-started from its lower neighbour's plan."""
    for _ in range(extra):
        feasible = [p for p in points if p.status != Status.infeasible]
        if len(feasible) < 3:
            break
        bends = [(_bend(*feasible[i : i + 3]), i) for i in range(len(feasible) - 2)]
        _, i = max(bends)
        a, b, c = feasible[i], feasible[i + 1], feasible[i + 2]
        # Split the wider of the two intervals around the bend.
        low, high = (a, b) if b.budget_w - a.budget_w >= c.budget_w - b.budget_w else (b, c)
        middle = (low.budget_w + high.budget_w) / 2
        if high.budget_w - low.budget_w < 1.0:
            break
        result = _at_budget(workload, middle, settings, plans[low.budget_w])
        plans[middle] = result
        points = sorted([*points, _point(middle, result)], key=lambda p: p.budget_w)
    return points


def _bend(a: FrontierPoint, b: FrontierPoint, c: FrontierPoint) -> float:
    """How far b lies above the chord from a to c, in speedup units."""
    if c.budget_w == a.budget_w:
        return 0.0
    chord = a.weighted_speedup + (c.weighted_speedup - a.weighted_speedup) * (b.budget_w - a.budget_w) / (
        c.budget_w - a.budget_w
    )
    return abs(b.weighted_speedup - chord)


def knee(points: list[FrontierPoint]) -> float | None:
    """The budget whose point is farthest above the chord from the first to the last point (both axes scaled)."""
    pts = [p for p in points if p.status != Status.infeasible]
    if len(pts) < 3:
        return None
    x0, x1 = pts[0].budget_w, pts[-1].budget_w
    y0, y1 = pts[0].weighted_speedup, pts[-1].weighted_speedup
    if x1 == x0 or y1 == y0:
        return None

    def height(p: FrontierPoint) -> float:
        x, y = (p.budget_w - x0) / (x1 - x0), (p.weighted_speedup - y0) / (y1 - y0)
        return y - x

    return max(pts, key=height).budget_w


def _point(budget: float, result: Plan) -> FrontierPoint:
    hard = [p for p in result.placements if Priority(p.priority) in HARD_PRIORITIES and p.deadline_hours is not None]
    return FrontierPoint(
        budget_w=budget,
        status=result.status,
        weighted_speedup=result.weighted_speedup,
        power_w=result.power_w,
        admitted=sum(p.admitted for p in result.placements),
        hard_deadlines_met=sum(bool(p.meets_deadline) for p in hard),
        hard_deadlines=len(hard),
        gap=result.gap,
    )


def _empty(workload: Workload, started: float, reason: str) -> Frontier:
    return Frontier(
        workload=workload.name,
        points=(),
        least_feasible_w=None,
        saturation_w=None,
        current_budget_w=workload.power.budget_w,
        knee_budget_w=None,
        solve_seconds=time.monotonic() - started,
        reason=reason,
    )


def plot_frontier(result: Frontier, path: str | Path | None = None) -> bytes:
    """Weighted speedup against budget (kW) with the current budget and the knee marked; deadlines met below."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = [p for p in result.points if p.status != Status.infeasible]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), dpi=100, sharex=True, height_ratios=[3, 1])
    kw = [p.budget_w / 1000 for p in pts]
    top.plot(kw, [p.weighted_speedup for p in pts], marker="o", color="tab:blue", label="optimal weighted speedup")
    if result.current_budget_w is not None:
        top.axvline(result.current_budget_w / 1000, color="tab:red", linestyle="--", label="current budget")
    if result.knee_budget_w is not None:
        k = next(p for p in pts if p.budget_w == result.knee_budget_w)
        top.scatter([k.budget_w / 1000], [k.weighted_speedup], s=160, facecolors="none", edgecolors="tab:orange",
                    linewidths=2, zorder=3, label="knee")
    top.set_ylabel("weighted speedup")
    top.set_title(f"{result.workload}: what each kilowatt buys")
    top.grid(alpha=0.3)
    top.legend(loc="lower right")
    bottom.step(kw, [p.hard_deadlines_met for p in pts], where="post", color="tab:green", label="hard deadlines met")
    bottom.plot(kw, [p.admitted for p in pts], color="tab:gray", linestyle=":", label="jobs admitted")
    bottom.set_xlabel("global power budget (kW)")
    bottom.set_ylabel("jobs")
    bottom.grid(alpha=0.3)
    bottom.legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    plt.close(fig)
    data = buffer.getvalue()
    if path is not None:
        Path(path).write_bytes(data)
    return data
