"""The import graph keeps its shape: no cycle (imports inside functions count) and no arrow up the layers."""

from __future__ import annotations

import grimp

from tests.support.architecture import check


def test_the_package_has_no_cycle_and_no_forbidden_arrow():
    report = check()
    assert report.cycles == ()
    assert report.forbidden == ()


def _graph(*edges: tuple[str, str]) -> grimp.ImportGraph:
    graph = grimp.ImportGraph()
    for importer, imported in edges:
        graph.add_module(importer)
        graph.add_module(imported)
        graph.add_import(importer=importer, imported=imported)
    return graph


def test_the_checker_finds_a_cycle_and_the_arrows_it_forbids():
    report = check(_graph(
        ("optsched.solve.planner", "optsched.explain.planning"),  # solve -> features: up
        ("optsched.explain.planning", "optsched.solve.planner"),  # and back: a cycle
        ("optsched.verify.placement", "optsched.model.data"),  # verifiers see only the schema
        ("optsched.night.engine", "flask"),  # no web framework under optsched/
        ("optsched.service.kinds", "optsched.explain.planning"),  # down: allowed
        ("optsched.testing.instances", "tests.support.factories"),  # the installed package needs no harness
        ("tests.test_cli", "bench.load"),  # tests never import bench
        ("bench.reliability", "tests.test_cli"),  # bench imports only the harness from tests/
        ("bench.load", "tests.support.server"),  # allowed
    ))
    assert report.cycles == (("optsched.explain.planning", "optsched.solve.planner"),)
    assert {(a, b) for a, b, _ in report.forbidden} == {
        ("optsched.solve.planner", "optsched.explain.planning"),
        ("optsched.verify.placement", "optsched.model.data"),
        ("optsched.night.engine", "flask"),
        ("optsched.testing.instances", "tests.support.factories"),
        ("tests.test_cli", "bench.load"),
        ("bench.reliability", "tests.test_cli"),
    }
