"""Waiting out a dependency (the database, Redis) that does not answer: the backoff between retries, and one log
line when it stops answering and one when it is back."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from typing import TypeVar

log = logging.getLogger(__name__)

_T = TypeVar("_T")

# Waits between retries while a dependency (the database, Redis) does not answer: doubling from the first, capped.
BACKOFF_FIRST_S, BACKOFF_MAX_S = 0.25, 5.0


def backoff_s(retry: int) -> float:
    """Seconds to wait before retry number `retry` (0-based) of a call to a dependency that does not answer."""
    return min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** min(retry, 16))


class Availability:
    """Whether a dependency answers, as one process sees it: logs one line when it stops answering and one when
    it answers again (with how long it was away), not one per failed call."""

    def __init__(self, what: str, logger: logging.Logger | None = None):
        self.what = what
        self.log = logger or log
        self.down_since: float | None = None

    @property
    def down(self) -> bool:
        return self.down_since is not None

    def failed(self, exc: BaseException, doing: str = "") -> None:
        if self.down_since is None:
            self.down_since = time.monotonic()
            self.log.warning("%s does not answer%s (%s: %s); retrying with backoff", self.what,
                             f" ({doing})" if doing else "", type(exc).__name__, _first_line(exc))

    def ok(self) -> None:
        if self.down_since is not None:
            self.log.warning("%s answers again (after %.1f s)", self.what, time.monotonic() - self.down_since)
            self.down_since = None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


def retry_while_away(call: Callable[[], _T], outages: tuple[type[Exception], ...], state: Availability, doing: str,
                     *, for_s: float = math.inf) -> _T:
    """`call()`, retried with backoff while it raises one of `outages` (its dependency does not answer), for up to
    `for_s` seconds; then the last outage error is raised."""
    deadline = time.monotonic() + for_s
    retry = 0
    while True:
        try:
            result = call()
        except outages as exc:
            state.failed(exc, doing)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise
            time.sleep(min(backoff_s(retry), remaining))
            retry += 1
            continue
        state.ok()
        return result
