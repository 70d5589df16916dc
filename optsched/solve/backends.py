"""Two ways to hand the same formulation to HiGHS: through Pyomo, or as one sparse matrix straight to highspy.

The constraint families in optsched.model call only `ModelBuilder` methods, so both backends build the same
rows; tests solve random workloads with both and compare the optima. Both are solved through one protocol,
`SolverBackend`, whose every solve takes one `SolveRequest` (optsched.solve.highs). The HiGHS backend is the
default because Pyomo's expression and hand-off layers cost more than the solve itself on large workloads
(bench/results/planner.md has the measured ratio). The Pyomo backend lives in optsched.solve.pyomo_backend: it
offers `SolverBackend` but no `highs()`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Protocol

import highspy
import numpy as np

from optsched.model.builder import ModelBuilder
from optsched.model.constraints import ExtraFunctionality, populate_model
from optsched.model.data import ModelData
from optsched.model.objectives import ExtraObjective
from optsched.solve.highs import Outcome, SolveRequest, SolveResult, new_highs, run_highs, solution_values
from optsched.solve.pyomo_backend import PyomoBuilder

# (variable block, key) -> (lower, upper) of the columns a sub-MIP narrows
ColumnBounds = Mapping[tuple[str, Hashable], tuple[float, float]]


class SolverBackend(Protocol):
    """How every backend's model is solved, once built (in the manner of Pyomo's contrib.solver SolverBase): the
    planner and every feature call only these. `HighsBuilder` and `PyomoBuilder` satisfy it (checked by mypy on
    `BACKENDS`); both map their statuses to `Outcome` in optsched.solve.highs."""

    solve_seconds: float  # time spent solving this model, over every solve
    # A solve that ignored its interrupt still owns the solver: no later solve or change may touch it.
    abandoned: bool

    def prepare(self) -> None:
        """Hand the model to the solver now, so that the hand-off is timed apart from the first solve."""

    def solve(self, request: SolveRequest) -> SolveResult:
        """Solve the model as it is now (rows added since the last solve included)."""

    def solve_within(self, bounds: ColumnBounds, request: SolveRequest) -> SolveResult:
        """Solve with some columns' bounds narrowed (a sub-MIP), then restore them."""

    def values(self, result: SolveResult, name: str, keys: Iterable[Hashable]) -> dict[Hashable, float]:
        """The values of variables `name[key]` at `result`."""


class HighsBuilder(ModelBuilder):
    """Columns and rows collected in flat arrays and passed to highspy in two bulk calls; solved by run_highs
    (the watchdog, warm starts, MIP callbacks)."""

    solve_seconds: float = 0.0
    abandoned: bool = False

    def __init__(self, name: str = "optsched"):
        self.name = name
        self._columns: dict[str, dict[Hashable, int]] = {}
        self._first: dict[str, int] = {}  # each block's first column: a block's columns are contiguous
        self._lower: list[float] = []
        self._upper: list[float] = []
        self._integer: list[int] = []
        self._row_lower: list[float] = []
        self._row_upper: list[float] = []
        self._starts: list[int] = []
        self._index: list[int] = []
        self._value: list[float] = []
        self._cost = np.zeros(0)  # objective coefficient of each column
        self._offset = 0.0
        self._maximise = False
        self._h: highspy.Highs | None = None
        self.row_keys: list[tuple[str, Hashable]] = []

    def prepare(self) -> None:
        self.highs()

    def solve(self, request: SolveRequest) -> SolveResult:
        if self.abandoned:
            return SolveResult(Outcome.limit_without_solution, None, None, 0.0, None, abandoned=True)
        h = self.highs()
        start = None
        if request.warm_start:
            cols = [(self.column(n, k), v) for (n, k), v in request.warm_start.items() if self.has(n, k)]
            start = (np.array([c for c, _ in cols], dtype=np.int32), np.array([v for _, v in cols]))
        result = run_highs(
            h, wall_deadline=request.wall_deadline, mip_gap=request.mip_gap, threads=request.threads,
            warm_start=start, relax=request.relax, integer_columns=self.integer_columns(), presolve=request.presolve,
            on_poll=request.on_poll,
        )
        self.solve_seconds += result.seconds
        self.abandoned = result.abandoned
        return result

    def solve_within(self, bounds: ColumnBounds, request: SolveRequest) -> SolveResult:
        if self.abandoned:
            return self.solve(request)
        h = self.highs()
        cols = np.array([self.column(n, k) for n, k in bounds], dtype=np.int32)
        old_lower, old_upper = self.column_bounds(cols)
        new = np.array(list(bounds.values()), dtype=np.float64).reshape(-1, 2)
        h.changeColsBounds(len(cols), cols, new[:, 0].copy(), new[:, 1].copy())
        try:
            return self.solve(request)
        finally:
            if not self.abandoned:
                h.changeColsBounds(len(cols), cols, old_lower, old_upper)

    def values(self, result: SolveResult, name: str, keys: Iterable[Hashable]) -> dict[Hashable, float]:
        return solution_values(result, self.column, name, keys)

    def add_variables(self, name, keys, lower, upper, integer):
        if self._h is not None:
            raise RuntimeError("add variables before the model is first solved")
        if name in self._columns:
            raise ValueError(f"variable block {name!r} added twice")
        block = self._columns.setdefault(name, {})
        keys = list(keys)
        first = len(self._lower)
        self._first[name] = first
        block.update(zip(keys, range(first, first + len(keys)), strict=True))
        self._lower.extend(lower)
        self._upper.extend(upper)
        if integer:
            self._integer.extend(range(first, first + len(keys)))

    def column(self, name, key):
        return self._columns[name][key]

    def block_keys(self, name):
        return list(self._columns[name])

    def add_matrix_rows(self, family, keys, lower, upper, entries):
        if not len(keys):
            return
        rows = np.concatenate([r for _, r, _, _ in entries])
        cols = np.concatenate([self._first[name] + pos for name, _, pos, _ in entries]).astype(np.int32)
        vals = np.concatenate([c for _, _, _, c in entries]).astype(np.float64)
        order = np.argsort(rows, kind="stable")  # row by row, each row's entries in the order they were given
        starts = np.searchsorted(rows[order], np.arange(len(keys)))
        lower, upper = np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)
        self.row_keys.extend((family, k) for k in keys)
        if self._h is not None:
            self._h.addRows(len(keys), lower, upper, len(vals), starts.astype(np.int32), cols[order], vals[order])
            return
        offset = len(self._index)
        self._starts.extend((starts + offset).tolist())
        self._index.extend(cols[order].tolist())
        self._value.extend(vals[order].tolist())
        self._row_lower.extend(lower.tolist())
        self._row_upper.extend(upper.tolist())

    def integer_columns(self):
        return np.array(self._integer, dtype=np.int32)

    def column_bounds(self, cols):
        return np.asarray(self._lower)[cols], np.asarray(self._upper)[cols]

    def add_rows(self, family, rows):
        if self._h is not None:
            return self._add_rows_to_solver(family, rows)
        columns, index, value = self._columns, self._index, self._value
        for key, terms, lo, hi in rows:
            self._starts.append(len(index))
            index.extend([columns[var][k] for var, k, _ in terms])
            value.extend([coef for _, _, coef in terms])
            self._row_lower.append(lo)
            self._row_upper.append(hi)
            self.row_keys.append((family, key))

    def _add_rows_to_solver(self, family, rows):
        h = self.highs()
        for key, terms, lo, hi in rows:
            idx = np.array([self._columns[v][k] for v, k, _ in terms], dtype=np.int32)
            val = np.array([c for _, _, c in terms], dtype=np.float64)
            h.addRow(lo, hi, len(idx), idx, val)
            self.row_keys.append((family, key))

    def set_objective(self, terms, constant, maximise, entries=()):
        cost = np.zeros(len(self._lower))
        for name, positions, coefs in entries:
            np.add.at(cost, self._first[name] + positions, coefs)
        columns = self._columns
        for var, k, coef in terms:
            cost[columns[var][k]] += coef
        self._cost = cost
        self._offset = constant
        self._maximise = maximise
        if self._h is not None:
            self._pass_objective(self._h)

    def highs(self) -> highspy.Highs:
        """The highspy.Highs object holding the model, synchronised with every row added so far."""
        if self._h is None:
            h = new_highs()
            n = len(self._lower)
            h.addVars(n, np.array(self._lower, dtype=np.float64), np.array(self._upper, dtype=np.float64))
            if self._integer:
                cols = np.array(self._integer, dtype=np.int32)
                h.changeColsIntegrality(len(cols), cols, np.ones(len(cols), dtype=np.uint8))
            if self._row_lower:
                h.addRows(
                    len(self._row_lower),
                    np.array(self._row_lower, dtype=np.float64),
                    np.array(self._row_upper, dtype=np.float64),
                    len(self._index),
                    np.array(self._starts, dtype=np.int32),
                    np.array(self._index, dtype=np.int32),
                    np.array(self._value, dtype=np.float64),
                )
            self._h = h
            self._pass_objective(h)
        return self._h

    def _pass_objective(self, h: highspy.Highs) -> None:
        n = len(self._lower)
        costs = np.zeros(n)
        costs[: len(self._cost)] = self._cost
        h.changeColsCost(n, np.arange(n, dtype=np.int32), costs)
        h.changeObjectiveOffset(self._offset)
        h.changeObjectiveSense(highspy.ObjSense.kMaximize if self._maximise else highspy.ObjSense.kMinimize)


# A built model of either backend: the families wrote it as a ModelBuilder, it solves as a SolverBackend (mypy
# checks that both satisfy the protocol wherever a Builder is passed as one, as the planner's strategies do).
Builder = HighsBuilder | PyomoBuilder
BACKENDS: dict[str, Callable[[str], Builder]] = {"highs": HighsBuilder, "pyomo": PyomoBuilder}


def make_builder(backend: str, name: str) -> Builder:
    try:
        return BACKENDS[backend](name)
    except KeyError:
        raise ValueError(f"unknown backend {backend!r}; choose one of {sorted(BACKENDS)}") from None


def build_model(
    data: ModelData,
    *,
    backend: str = "highs",
    extra_functionality: ExtraFunctionality | None = None,
    with_budgets: bool = True,
    extra_objective: ExtraObjective | None = None,
) -> Builder:
    """The whole MILP for one workload on a new builder of `backend`, ready to solve."""
    b = make_builder(backend, name=data.workload.name)
    populate_model(
        b, data, extra_functionality=extra_functionality, with_budgets=with_budgets, extra_objective=extra_objective
    )
    return b
