"""The time limit of one solve, handed out in shares: every phase asks its budget, none computes deadlines."""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass(frozen=True)
class TimeBudget:
    """Time until `deadline` (time.monotonic seconds)."""

    deadline: float

    @classmethod
    def of(cls, seconds: float) -> TimeBudget:
        """A budget of `seconds` from now."""
        return cls(time.monotonic() + seconds)

    def remaining(self) -> float:
        """Seconds left, never negative."""
        return max(0.0, self.deadline - time.monotonic())

    def expired(self) -> bool:
        return time.monotonic() >= self.deadline

    def share(self, fraction: float, at_least: float = 0.0) -> TimeBudget:
        """`fraction` of the time left (but `at_least` seconds, when the budget has them) as a budget of its own."""
        now = time.monotonic()
        left = max(0.0, self.deadline - now)
        return TimeBudget(min(self.deadline, now + max(at_least, fraction * left)))

    def keep_back(self, seconds: float) -> TimeBudget:
        """The budget less `seconds` kept at its end (for what must follow it)."""
        return TimeBudget(self.deadline - seconds)
