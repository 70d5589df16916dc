"""A small exception hierarchy whose messages say what to do next."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FieldError:
    path: str  # JSON path of the offending field, "" for the document itself
    message: str

    def __str__(self) -> str:
        return f"{self.path or '<document>'}: {self.message}"


class OptschedError(Exception):
    """Base of every error optsched raises on purpose."""


class _FieldErrors(OptschedError):
    """An error built from its list of field errors, and rebuilt from it when unpickled: the default rebuilds an
    exception from `args` (its message), so one raised in a solver or worker process came back with a message that
    lists every letter of the old message as a problem."""

    errors: list[FieldError]

    def __reduce__(self) -> tuple[type, tuple[list[FieldError]]]:
        return (type(self), (self.errors,))


class InvalidWorkload(_FieldErrors, ValueError):
    """The workload failed validation; `errors` lists every offending field at once."""

    def __init__(self, errors: list[FieldError]):
        self.errors = list(errors)
        lines = "\n".join(f"  {e}" for e in self.errors)
        super().__init__(f"invalid workload ({len(self.errors)} problem(s)); fix these fields:\n{lines}")


class InvalidStudy(InvalidWorkload):
    """A queueing study failed validation; an InvalidWorkload, so every handler of bad input takes it as one."""

    def __init__(self, errors: list[FieldError]):
        super().__init__(errors)
        lines = "\n".join(f"  {e}" for e in self.errors)
        self.args = (f"invalid study ({len(self.errors)} problem(s)); fix these fields:\n{lines}",)


class InvalidPlan(_FieldErrors, ValueError):
    """A plan document that does not parse (for the verifier); `errors` lists the fields."""

    def __init__(self, errors: list[FieldError]):
        self.errors = list(errors)
        super().__init__("invalid plan: " + "; ".join(str(e) for e in self.errors))
