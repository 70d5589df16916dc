"""The fast tier's check (tests/support/durations.py) names a long test without the slow marker, and only that; under
`make test` a skipped test fails (tests/support/no_skips.py)."""

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


SKIPPING = """
import pytest


def test_needs_a_service():
    pytest.skip("no such service here")


@pytest.mark.xfail(reason="known")
def test_known_failure():
    assert False
"""


def test_under_make_test_a_skipped_test_fails(pytester, monkeypatch):
    """With OPTSCHED_NO_SKIPS=1 a skip is a failure and an xfail stays one; without it, a skip stays a skip."""
    pytester.makepyfile(test_suite=SKIPPING)
    monkeypatch.setenv("OPTSCHED_NO_SKIPS", "1")
    strict = pytester.runpytest("-p", "tests.support.no_skips", "-p", "no:cacheprovider")
    strict.assert_outcomes(failed=1, xfailed=1)
    strict.stdout.fnmatch_lines(["*skipped under OPTSCHED_NO_SKIPS=1*"])
    monkeypatch.delenv("OPTSCHED_NO_SKIPS")
    plain = pytester.runpytest("-p", "tests.support.no_skips", "-p", "no:cacheprovider")
    plain.assert_outcomes(skipped=1, xfailed=1)
