"""Pricing rounds handed to other machines: what a queue implements to take them (optsched.infra.rq.pricing does,
over RQ), and where a solve running in this process finds it.

Each job is priced on its own, so a round split into blocks gives the same columns wherever the blocks run. The
solve never waits on a block no one took: the session prices any block still unclaimed itself (`local`), which is
what keeps solves that run on the queue's own workers from waiting on each other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from optsched.model.data import Arrays
from optsched.solve.columns.master import Column

# A round fans out only with at least this many blocks of jobs (PRICE_BLOCK each): below it one process prices
# the round faster than the queue carries it.
FAN_OUT_MIN_BLOCKS = 8

PriceBlock = Callable[[np.ndarray], list[tuple[int, Column]]]


def shares(blocks: int, parts: int) -> list[list[int]]:
    """Block indices 0..blocks-1 in at most `parts` runs of consecutive blocks, as even as they go: one per pricing
    process, so that a round's prices reach each process once."""
    return [c.tolist() for c in np.array_split(np.arange(blocks), min(blocks, parts))]


class PricingSession(Protocol):
    """One solve's pricing on the queue: the workload's arrays were published when it opened."""

    def price(
        self, blocks: list[np.ndarray], sigma: np.ndarray, pi: np.ndarray, local: PriceBlock
    ) -> list[list[tuple[int, Column]]]:
        """Each block's columns at duals sigma (per job) and level prices pi, in block order; `local` prices a
        block in this process (those no worker claimed, and those a worker claimed but did not answer)."""
        ...

    def close(self) -> None:
        """Delete what the session published."""
        ...


class PricingFanOut(Protocol):
    def width(self) -> int:
        """Processes that price a round at once, this one included (partial pricing asks each for its share)."""
        ...

    def open(self, a: Arrays, hosts: int | None) -> PricingSession:
        """Publish the workload's arrays for the workers; the session prices rounds until closed, with `hosts`
        hosts per job (`BlockPricer.price_block`)."""
        ...


# Where column generation in this process sends its pricing rounds: set by the queue around each solve
# (an RQ work horse), None elsewhere.
_fan_out: PricingFanOut | None = None


def set_pricing_fan_out(fan_out: PricingFanOut | None) -> None:
    global _fan_out
    _fan_out = fan_out


def pricing_fan_out() -> PricingFanOut | None:
    return _fan_out
