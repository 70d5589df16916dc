"""The best plan of one solve so far and its bound: every strategy hands its plans and bounds to one
`IncumbentTracker`, which keeps the better, reports progress and publishes incumbents."""

from __future__ import annotations

import math
import time

from optsched.model.amdahl import speedup
from optsched.model.data import ModelData
from optsched.model.expressions import budgets
from optsched.model.objectives import TIE_BREAK_SHARE, ExtraObjective, Objective, fairness_upper_bound
from optsched.schema.plan import Plan, Status
from optsched.schema.tolerances import DEADLINE_RTOL, POWER_TOL_W
from optsched.solve.extract import (
    Counts,
    Used,
    exact_speedups,
    extract,
    group_use,
    power,
    relative_gap,
    used_by_job,
)
from optsched.solve.options import OnIncumbent, Progress

# Below the solver's feasibility tolerances (1e-7 per row, speeds summed over many rows) a gap means nothing:
# objectives this close count as equal, and a requested gap below MIN_GAP is treated as MIN_GAP.
ABS_GAP = 1e-6
MIN_GAP = 1e-6
# on_incumbent gets a plan at most this often (more rarely when extracting one costs more than a quarter of it).
INCUMBENT_INTERVAL_S = 0.5


class IncumbentTracker:
    """The best feasible plan (`best`, valued `best_value` on the objective plus any extra terms) and the best
    bound of one solve; `progress` hears each improvement, `on_incumbent` gets improved plans (module doc)."""

    def __init__(
        self,
        data: ModelData,
        objective: Objective,
        gap: float,
        *,
        started: float,
        warnings: tuple[str, ...] = (),
        extra: ExtraObjective | None = None,
        progress: Progress | None = None,
        on_incumbent: OnIncumbent | None = None,
    ) -> None:
        self.data, self.objective, self.gap = data, objective, gap
        self.started, self.warnings = started, warnings
        self.extra = extra  # terms added to the objective; plans are ranked with them
        self.progress, self.on_incumbent = progress, on_incumbent
        self.maximise = objective.sense == "max"
        self.best: Counts | None = None
        self.best_value: float | None = None
        self.bound: float | None = None
        self.rounds = 0  # MILP solves so far
        self.infeasible = False  # the solver proved the model infeasible
        self.proven = False  # the best plan is within the gap of the bound
        self.published: Counts | None = None  # the counts last handed to on_incumbent
        self.published_at = -math.inf
        self.extract_seconds = 0.0  # what the last extraction of a plan took

    def consider(self, counts: Counts | None) -> None:
        """Keep `counts` as the incumbent if it is a feasible plan better than the one we have."""
        if counts is None or not feasible(self.data, counts):
            return
        value = self.objective.value(self.data, exact_speedups(self.data, counts), power(self.data, counts))
        if not math.isfinite(value):
            return  # a plan the objective refuses (below a fairness floor)
        if self.extra is not None:
            value += self.extra.value(self.data, counts)
        if self.best_value is None or (value > self.best_value if self.maximise else value < self.best_value):
            self.best, self.best_value = counts, value
            self._report()
            self.publish()

    def improve_bound(self, bound: float | None) -> None:
        """Keep `bound` if it is tighter than the one we have."""
        if bound is None:
            return
        if self.bound is not None:
            bound = min(self.bound, bound) if self.maximise else max(self.bound, bound)
        if bound != self.bound:
            self.bound = bound
            self._report()

    def within_gap(self) -> bool:
        """The best plan is within the gap of the bound (the tie-break term may widen the bound by TIE_BREAK_SHARE
        of the gap; see objectives.py)."""
        if self.best_value is None or self.bound is None:
            return False
        if abs(self.bound - self.best_value) <= ABS_GAP:
            return True
        return relative_gap(self.best_value, self.bound) <= max(self.gap, MIN_GAP) * (1 + TIE_BREAK_SHARE)

    def publish(self) -> None:
        """Hand the best plan to on_incumbent if it changed, at most once per interval (the planner hands over
        the last one itself, as the final plan with the interim status: `publish_final`)."""
        if self.on_incumbent is None or self.best is None or self.best is self.published:
            return
        now = time.monotonic()
        if now - self.published_at < max(INCUMBENT_INTERVAL_S, 4 * self.extract_seconds):
            return
        plan = extract(
            self.data, self.objective, self.best, Status.time_limit, self.bound, self.warnings, self.started,
            self.rounds,
        )
        self.extract_seconds = time.monotonic() - now
        self.published, self.published_at = self.best, now
        self.on_incumbent(plan)

    def publish_final(self, plan: Plan) -> None:
        """Always the last: `plan`, the final plan of the best counts, with the interim status (it costs no second
        extraction), unless those counts were published already."""
        if self.on_incumbent is not None and self.best is not self.published:
            self.published = self.best
            self.on_incumbent(plan.model_copy(update={"status": Status.time_limit}))

    def _report(self) -> None:
        if self.progress is not None:
            self.progress(time.monotonic() - self.started, self.best_value, self.bound)


def trivial_bound(data: ModelData, objective: Objective) -> float:
    """Every job at its best speedup, ignoring capacity and power (max); the idle draw (min); a fairness first
    solve: every job at its solo speedup."""
    if objective.fair and data.fairness_floor is None:
        return fairness_upper_bound(data)
    if objective.sense == "max":
        return sum(job.objective_weight * data.best_speedup(j) for j, job in enumerate(data.jobs))
    return data.idle_power_w


def feasible(data: ModelData, counts: Counts) -> bool:
    """A heuristic allocation that satisfies every must-run job and every budget (capacity holds by construction)."""
    if any(n < 0 for n in counts.values()):
        return False
    used, drawn = group_use(data, counts)
    if any(used[g] > group.count for g, group in enumerate(data.groups)):
        return False
    for domain, limit in budgets(data):
        total = sum(
            drawn[g] + (group.count - used[g]) * group.idle_w
            for g, group in enumerate(data.groups) if domain is None or group.domain == domain
        )
        if total > limit + POWER_TOL_W:
            return False
    by_job = used_by_job(data, counts)
    placed = {j for j, u in enumerate(by_job) if u}
    return all(satisfied(data, j, by_job[j]) for j in placed) and all(j in placed for j in data.must_run)


def satisfied(data: ModelData, j: int, used: Used) -> bool:
    """Admitted with min..max devices and, with a deadline, meeting it (as the verifier recomputes it)."""
    job = data.jobs[j]
    n = sum(m for _, m in used)
    if n < job.min_devices or n > data.max_devices(j):
        return False
    if job.deadline_hours is None:
        return True
    s = speedup(job.parallel_fraction, max(o.speed for o, _ in used), sum(o.speed * m for o, m in used))
    return s > 0 and job.work_hours / s <= job.deadline_hours * (1 + DEADLINE_RTOL)
