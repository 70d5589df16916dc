"""The interface the constraint families and objectives write the model against; optsched.solve.backends
implements it for HiGHS (direct) and Pyomo, and adds solving."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterable, Sequence

Term = tuple[str, Hashable, float]  # (variable block, key, coefficient)
Row = tuple[Hashable, list[Term], float, float]  # (key, terms, lower, upper)


class ModelBuilder(ABC):
    """A linear model under construction: what the constraint families and objectives may call (no solving here)."""

    tie_break_weight: float = 0.0  # set by the objective; see optsched.objectives

    @property
    def cut_keys(self) -> set:
        """(job, t) of every tangent cut in the model, so that none is added twice."""
        if "_cut_keys" not in self.__dict__:
            self._cut_keys: set = set()
        return self._cut_keys

    @abstractmethod
    def add_variables(
        self, name: str, keys: Sequence[Hashable], lower: Sequence[float], upper: Sequence[float], integer: bool
    ) -> None: ...

    @abstractmethod
    def add_rows(self, family: str, rows: Iterable[Row]) -> None: ...

    @abstractmethod
    def set_objective(self, terms: list[Term], constant: float, maximise: bool) -> None: ...

    @abstractmethod
    def column(self, name: str, key: Hashable) -> int:
        """The HiGHS column of a variable (for warm starts and reading values)."""

    def has(self, name: str, key: Hashable) -> bool:
        try:
            self.column(name, key)
            return True
        except KeyError:
            return False
