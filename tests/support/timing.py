"""Bounds for the asserts on wall time, so that the suite keeps its word on a busy machine.

`make test-busy` runs the tests beside two CPU-bound processes on 2 cores (load 3-5): a step that takes t s on an
idle machine then takes up to about 3 t, and longer on a machine busier still (`slowdown`). Speed is measured in
bench/; a test asserts only a bound that a broken implementation misses by far (a time limit not kept, a server that
queues a probe behind slow requests).
"""

from __future__ import annotations

import os

# Three runnable processes on two cores, plus the scheduler's and the caches' losses: the least slowdown allowed.
LOAD_FACTOR = 3.0
# On a busier machine, a CPU-bound step gets cores / (load + 1) of a core; this much more for the caches' losses.
CACHE_LOSS = 1.5
# Interpreter and process start-up, a garbage collection, a slow first import.
MARGIN_S = 1.0


def slowdown() -> float:
    """How many times slower than on an idle machine a CPU-bound step may run now: LOAD_FACTOR, or more when the
    1-minute load average shows a machine busier than load 3-5 (other jobs beside `make test-busy`'s two)."""
    busy = CACHE_LOSS * (os.getloadavg()[0] + 1) / (os.cpu_count() or 1)
    return max(LOAD_FACTOR, busy)


def loaded(idle_s: float) -> float:
    """The bound, in seconds, for a step that takes `idle_s` seconds on an idle machine."""
    return slowdown() * idle_s + MARGIN_S


def past_deadline(deadline_s: float, overrun_s: float) -> float:
    """The bound for a call told to stop at `deadline_s`: the deadline is wall-clock time and holds under load;
    what runs after it (`overrun_s` on an idle machine: the watchdog's grace, the wait for an interrupt, the final
    extraction) is slowed by the load."""
    return deadline_s + loaded(overrun_s)
