"""The Pyomo backend: the MILP as a `pyomo.environ.ConcreteModel` (`b.model`), solved by HiGHS through Pyomo's
public persistent solver interface (`pyomo.contrib.solver`, `SolverFactory("highs")`), never through its internals.

Components of `b.model`, indexed by positions in the workload (`data.jobs[j]`, `data.groups[g]`,
`data.groups[g].power_levels[l]`; `data.options` lists every (j, g, l) as `o.key`):

- `n[j, g, l]` devices of group g at power level l given to job j (integer, 0 <= n <= min(count, max_devices))
- `h[j, g, l]` 1 if that option carries job j's serial part (binary; only jobs with p < 1)
- `a[j]` 1 if job j is admitted (binary); `S[j]` modelled speedup, `R[j]` aggregate speed, `s_host[j]` host speed
- one indexed `Constraint` per family of optsched.model.constraints (`device_capacity[g]`, `admission_min[j]`,
  `power_budget[domain]` with "*" for the fleet, `speedup_cut[(j, t)]`, ...), and `objective`

`extra_functionality(b, data)` may add any linear Pyomo component to `b.model` before the first solve; the planner
then solves the model with them and extracts the plan from `n` (README, "Python").

It solves the same formulation as the HiGHS backend, with three differences the public interface imposes:
no warm start (Pyomo's HiGHS interface takes no starting point; the planner still keeps its heuristic plans as
incumbents), no watchdog (HiGHS's own time limit stops it, checked between its work units) and no `on_poll`
(no MIP callbacks). Variables added to `b.model` after the first solve are not seen; rows added through
`add_rows` are.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

import numpy as np

from optsched.model.builder import ModelBuilder
from optsched.solve.highs import (
    SolveRequest,
    SolveResult,
    map_pyomo_status,
    pyomo_has_solution,
    solution_values,
    solver_log_shown,
)

log = logging.getLogger(__name__)

SOLVER = "highs"  # the name of HiGHS in pyomo.contrib.solver.common.factory.SolverFactory


class PyomoBuilder(ModelBuilder):
    """The rows as Pyomo components. Satisfies optsched.solve.backends.SolverBackend (`prepare`, `solve`,
    `solve_within`, `values`, `solve_seconds`) but has no `highs()`: Pyomo does the hand-off to HiGHS."""

    solve_seconds: float = 0.0  # time spent in Pyomo's solve (updates, HiGHS, results) over every solve
    abandoned: bool = False  # Pyomo's solve returns only once HiGHS has stopped: nothing is ever left running

    def __init__(self, name: str = "optsched"):
        import pyomo.environ as pyo

        self.pyo = pyo
        self.model = pyo.ConcreteModel(name=name)
        self._solver: Any = None
        self._vars: list = []  # VarData in column order: the index of `values` arrays
        self._columns: dict[str, dict[Hashable, int]] = {}
        self._integer: list = []
        self._relaxed = False
        self._pending: list = []  # rows added since the solver last saw the model
        self._objective_changed = False

    # -- building (optsched.model.builder.ModelBuilder) --

    def add_variables(self, name, keys, lower, upper, integer):
        if self._solver is not None:
            raise RuntimeError("add variables before the model is first solved")
        pyo = self.pyo
        keys = list(keys)
        bounds = {k: (_finite(lo), _finite(hi)) for k, lo, hi in zip(keys, lower, upper, strict=True)}
        var = pyo.Var(
            pyo.Set(initialize=keys, dimen=None),
            domain=pyo.Integers if integer else pyo.Reals,
            bounds=lambda m, *k: bounds[k if len(k) > 1 else k[0]],
        )
        self.model.add_component(name, var)
        block = self._columns.setdefault(name, {})
        for k in keys:
            block[k] = len(self._vars)
            self._vars.append(var[k])
            if integer:
                self._integer.append(var[k])

    def column(self, name, key):
        """The index of variable `name[key]` in a result's `values` (the order the variables were added in)."""
        return self._columns[name][key]

    def block_keys(self, name):
        return list(self._columns[name])

    def add_rows(self, family, rows):
        pyo = self.pyo
        component = self.model.component(family)
        if component is None:
            component = pyo.Constraint(pyo.Any)
            self.model.add_component(family, component)
        for key, terms, lo, hi in rows:
            expr = sum(coef * getattr(self.model, var)[k] for var, k, coef in terms)
            component[key] = (_finite(lo), expr, _finite(hi))
            if self._solver is not None:
                self._pending.append(component[key])

    def set_objective(self, terms, constant, maximise, entries=()):
        pyo = self.pyo
        terms = self.entry_terms(entries) + list(terms)
        if self.model.component("objective") is not None:
            self.model.del_component("objective")
        expr = constant + sum(coef * getattr(self.model, var)[k] for var, k, coef in terms)
        sense = pyo.maximize if maximise else pyo.minimize
        self.model.add_component("objective", pyo.Objective(expr=expr, sense=sense))
        self._objective_changed = self._solver is not None

    # -- solving --

    def prepare(self) -> None:
        """Hand the model to HiGHS through Pyomo on first use; later, pass it the rows and objective changed since."""
        if self._solver is None:
            from pyomo.contrib.solver.common.factory import SolverFactory

            solver = SolverFactory(SOLVER)
            # We tell the solver every change ourselves (below, _relax, solve_within), which spares a pass over every
            # constraint and variable before each solve (0.1 s per solve on the bench's M workload, 24,683 variables).
            updates = solver.config.auto_updates
            for option in list(updates):
                setattr(updates, option, False)
            solver.set_instance(self.model)
            self._solver = solver
            self._pending, self._objective_changed = [], False
            return
        if self._pending:
            self._solver.add_constraints(self._pending)
            self._pending = []
        if self._objective_changed:
            self._solver.set_objective(self.model.component("objective"))
            self._objective_changed = False

    def solve(self, request: SolveRequest) -> SolveResult:
        """`relax` makes our integer variables continuous until the next integer solve; `warm_start` and `on_poll`
        are not supported (module doc)."""
        self.prepare()
        self._relax(request.relax)
        if request.warm_start:
            log.debug("the Pyomo backend ignores warm starts (%d values)", len(request.warm_start))
        shown = solver_log_shown()
        limits: dict[str, Any] = {
            "time_limit": max(0.01, request.wall_deadline - time.monotonic()), "rel_gap": request.mip_gap,
            "abs_gap": 1e-9,  # HiGHS's default 1e-6 stops short of small relative gaps
        }
        if request.threads is not None:
            limits["threads"] = request.threads
        started = time.perf_counter()
        results = self._solver.solve(
            self.model,
            load_solutions=False,
            raise_exception_on_nonoptimal_result=False,
            tee=shown,
            # presolve off as in optsched.solve.highs.run_highs: it costs more than it saves on the full model.
            solver_options={"presolve": "on" if request.presolve else "off", "output_flag": shown},
            **limits,
        )
        has_solution = pyomo_has_solution(results.solution_status)
        values = self._load_values(results) if has_solution else None
        seconds = time.perf_counter() - started
        self.solve_seconds += seconds
        return SolveResult(
            outcome=map_pyomo_status(results.termination_condition, has_solution),
            incumbent=results.incumbent_objective if has_solution else None,
            bound=results.objective_bound,
            seconds=seconds,
            values=values,
            nodes=max(0, int(dict(results.extra_info).get("mip_node_count") or 0)),
        )

    def solve_within(
        self, bounds: Mapping[tuple[str, Hashable], tuple[float, float]], request: SolveRequest
    ) -> SolveResult:
        self.prepare()
        narrowed = [(self._vars[self.column(n, k)], lo, hi) for (n, k), (lo, hi) in bounds.items()]
        saved = [(v, v.lb, v.ub) for v, _, _ in narrowed]
        for v, lo, hi in narrowed:
            v.setlb(_finite(lo))
            v.setub(_finite(hi))
        self._solver.update_variables([v for v, _, _ in narrowed])
        try:
            return self.solve(request)
        finally:
            for v, lo, hi in saved:
                v.setlb(lo)
                v.setub(hi)
            self._solver.update_variables([v for v, _, _ in saved])

    def values(self, result: SolveResult, name: str, keys: Iterable[Hashable]) -> dict[Hashable, float]:
        return solution_values(result, self.column, name, keys)

    def _relax(self, relax: bool) -> None:
        """Our integer variables continuous (their bounds are explicit, so this is the LP relaxation) or integer again.
        Integer variables a caller added stay integer: the "LP" is then a MIP over those, and its bound stays valid."""
        if relax == self._relaxed or not self._integer:
            return
        domain = self.pyo.Reals if relax else self.pyo.Integers
        for v in self._integer:
            v.domain = domain
        self._solver.update_variables(self._integer)
        self._relaxed = relax

    def _load_values(self, results) -> np.ndarray:
        """Load the solution into the Pyomo variables and read them in column order. A variable no row or objective
        uses is not in the solver; it sits at its lower bound (as HiGHS leaves such a column)."""
        results.solution_loader.load_vars()
        return np.array([_value_or_lower(v) for v in self._vars], dtype=np.float64)


def _finite(bound: float | None) -> float | None:
    return None if bound is None or math.isinf(bound) else float(bound)


def _value_or_lower(v) -> float:
    if v.value is not None:
        return v.value
    return v.lb if v.lb is not None else 0.0
