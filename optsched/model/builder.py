"""The interface the constraint families and objectives write the model against; optsched.solve.backends
implements it for HiGHS (direct) and Pyomo, and adds solving."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterable, Sequence

import numpy as np

Term = tuple[str, Hashable, float]  # (variable block, key, coefficient)
Row = tuple[Hashable, list[Term], float, float]  # (key, terms, lower, upper)
# (variable block, row of each entry, position of its variable in the block, coefficient): one block's share of
# a sparse matrix of rows, positions in the order the block's keys were added.
Entries = tuple[str, np.ndarray, np.ndarray, np.ndarray]
CostEntries = tuple[str, np.ndarray, np.ndarray]  # (variable block, positions in the block, coefficients)


class ModelBuilder(ABC):
    """A linear model under construction: what the constraint families and objectives may call (no solving here)."""

    tie_break_weight: float = 0.0  # set by the objective; see optsched.model.objectives
    extra_objective: bool = False  # terms beside the objective's own (a re-plan's moves, say)

    @property
    def cut_keys(self) -> set[tuple[int, float]]:
        """(job, t) of every tangent cut in the model, so that none is added twice."""
        if "_cut_keys" not in self.__dict__:
            self._cut_keys: set[tuple[int, float]] = set()
        return self._cut_keys

    @abstractmethod
    def add_variables(
        self, name: str, keys: Sequence[Hashable], lower: Sequence[float], upper: Sequence[float], integer: bool
    ) -> None: ...

    @abstractmethod
    def add_rows(self, family: str, rows: Iterable[Row]) -> None: ...

    def add_matrix_rows(
        self, family: str, keys: Sequence[Hashable], lower: np.ndarray, upper: np.ndarray, entries: Sequence[Entries]
    ) -> None:
        """The rows `keys` of a family given as arrays; within a row, entries keep the order of `entries` and then
        their own order. This default writes them as term lists; a backend may take the arrays as they are."""
        names = {name: self.block_keys(name) for name, *_ in entries}
        terms: list[list[Term]] = [[] for _ in keys]
        for name, rows, positions, coefs in entries:
            block = names[name]
            for r, k, c in zip(rows.tolist(), positions.tolist(), coefs.tolist(), strict=True):
                terms[r].append((name, block[k], c))
        self.add_rows(family, zip(keys, terms, np.asarray(lower).tolist(), np.asarray(upper).tolist(), strict=True))

    @abstractmethod
    def block_keys(self, name: str) -> list[Hashable]:
        """The keys of variable block `name`, in the order they were added."""

    @abstractmethod
    def set_objective(
        self, terms: list[Term], constant: float, maximise: bool, entries: Sequence[CostEntries] = ()
    ) -> None:
        """The objective: `entries` (arrays, as in add_matrix_rows) then `terms`, coefficients of one variable
        added up, plus `constant`."""

    def entry_terms(self, entries: Sequence[CostEntries]) -> list[Term]:
        """`entries` written as terms."""
        terms: list[Term] = []
        for name, positions, coefs in entries:
            block = self.block_keys(name)
            terms.extend((name, block[k], c) for k, c in zip(positions.tolist(), coefs.tolist(), strict=True))
        return terms

    @abstractmethod
    def column(self, name: str, key: Hashable) -> int:
        """The HiGHS column of a variable (for warm starts and reading values)."""

    def has(self, name: str, key: Hashable) -> bool:
        try:
            self.column(name, key)
            return True
        except KeyError:
            return False
