"""The fast tier's check (tests/support/durations.py) names a long test without the slow marker, and only that."""

from __future__ import annotations

SUITE = """
import time

import pytest


def test_long_and_unmarked():
    time.sleep(0.3)


@pytest.mark.slow
def test_long_and_marked_slow():
    time.sleep(0.3)


def test_short():
    pass
"""


def test_a_long_test_not_marked_slow_fails_the_run_and_is_named(pytester):
    pytester.makeini("[pytest]\nmarkers = slow: long\n")
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest("-p", "tests.support.durations", "--fast-limit-s=0.2")
    result.assert_outcomes(passed=3)
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*tests over 0.2 s not marked slow*", "*s  test_suite.py::test_long_and_unmarked"])
    result.stdout.no_fnmatch_line("*test_long_and_marked_slow*")


def test_without_a_limit_nothing_is_checked(pytester):
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest("-p", "tests.support.durations", "-p", "no:cacheprovider")
    assert result.ret == 0
