"""optsched.solve.blocks: blocks mapped on threads come back in order and equal to the serial map, in this
process and in a forked child (whose threads are its own)."""

from __future__ import annotations

import multiprocessing
import threading

import numpy as np
import pytest

from optsched.solve.blocks import map_blocks


def _block_sums(blocks, threads):
    return map_blocks(lambda b: (float(b.sum()), threading.current_thread().name), blocks, threads)


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_blocks_come_back_in_order_and_equal_to_the_serial_map(threads):
    rng = np.random.default_rng(0)
    blocks = [rng.random(10_000) for _ in range(9)]
    assert [s for s, _ in _block_sums(blocks, threads)] == [float(b.sum()) for b in blocks]


def test_one_thread_or_one_block_runs_in_the_caller():
    blocks = [np.ones(3)] * 4
    assert {name for _, name in _block_sums(blocks, 1)} == {threading.current_thread().name}
    assert {name for _, name in _block_sums(blocks[:1], 4)} == {threading.current_thread().name}
    assert all(name.startswith("optsched-blocks") for _, name in _block_sums(blocks, 2))


def _child(queue):
    queue.put([s for s, _ in _block_sums([np.arange(5.0), np.arange(7.0)], 2)])


def test_a_forked_child_maps_on_threads_of_its_own():
    _block_sums([np.ones(2)] * 3, 2)  # the parent's pool exists before the fork
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child, args=(queue,))
    child.start()
    try:
        assert queue.get(timeout=60) == [10.0, 21.0]
    finally:
        child.join(60)
    assert child.exitcode == 0
