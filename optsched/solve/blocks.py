"""Blocks of jobs evaluated on threads: column generation's pricing and the Lagrangian bound are numpy over
blocks of jobs, and numpy releases the GIL inside its large array operations, so two threads on two cores take
a round's pricing and bound in 0.57-0.73 of one thread's time with the same answer
(docs/benchmarks/planner-large.md). Threads, not processes: the prices and the columns stay in this process
(local pricing processes gained nothing for that)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

_pools: dict[tuple[int, int], ThreadPoolExecutor] = {}
_lock = threading.Lock()


def map_blocks(fn: Callable[[T], R], blocks: Sequence[T], threads: int) -> list[R]:
    """[fn(b) for b in blocks], on up to `threads` threads; in order."""
    if threads <= 1 or len(blocks) <= 1:
        return [fn(b) for b in blocks]
    return list(_pool(threads).map(fn, blocks))


def _pool(threads: int) -> ThreadPoolExecutor:
    # One pool per process and size, kept between solves; a forked child (a worker of the service's pool) makes
    # its own, since threads do not survive a fork.
    key = (os.getpid(), threads)
    with _lock:
        pool = _pools.get(key)
        if pool is None:
            pool = _pools[key] = ThreadPoolExecutor(threads, thread_name_prefix="optsched-blocks")
        return pool
