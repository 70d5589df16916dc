"""The fast tier's rule, checked: a test that takes longer than `--fast-limit-s` must be marked slow.

`make test-fast` runs `-m "not slow"`, the inner loop; a test belongs to the slow tier by its marker
(`@pytest.mark.slow`, or `pytestmark = pytest.mark.slow` for a module), set by measured duration, not by a list
of paths. `make test-durations` runs the fast tier with `--fast-limit-s=2` and fails, naming them, when tests
not marked slow took longer (setup, call and teardown together).
"""

from __future__ import annotations

from collections import defaultdict

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--fast-limit-s", type=float, default=None,
                     help="fail when a test not marked slow takes longer than this many seconds")


class _Durations:
    def __init__(self, limit_s: float) -> None:
        self.limit_s = limit_s
        self.unmarked: set[str] = set()
        self.seconds: defaultdict[str, float] = defaultdict(float)

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        self.unmarked = {item.nodeid for item in items if item.get_closest_marker("slow") is None}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.nodeid in self.unmarked:
            self.seconds[report.nodeid] += report.duration

    def over(self) -> list[tuple[float, str]]:
        return sorted(((s, node) for node, s in self.seconds.items() if s > self.limit_s), reverse=True)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        over = self.over()
        if over:
            terminalreporter.section(f"tests over {self.limit_s:g} s not marked slow")
            for seconds, node in over:
                terminalreporter.write_line(f"{seconds:6.2f} s  {node}")

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.over() and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_configure(config: pytest.Config) -> None:
    limit_s = config.getoption("--fast-limit-s")
    if limit_s is not None:
        config.pluginmanager.register(_Durations(limit_s), "fast-limit")
