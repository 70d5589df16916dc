"""The import graph's rules, checked: no cycle (imports inside functions count), arrows only go down the layers.

    python -m tests.support.architecture     # prints the layers, the cycles and the forbidden arrows

Exit status 1 when there is any cycle or forbidden arrow. `make test` runs it (tests/test_architecture.py).
The graph comes from grimp, which reads every import statement of every module, at any depth.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import grimp

PACKAGES = ("optsched", "api", "tests", "bench")

# Low to high. A module may import modules of its own layer's package and of lower layers, never higher ones.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("schema", ("optsched.schema",)),
    ("model", ("optsched.model",)),
    ("verify", ("optsched.verify",)),
    ("solve", ("optsched.solve",)),
    ("features", ("optsched.explain", "optsched.night", "optsched.baselines", "optsched.replan", "optsched.queueing")),
    ("public API", ("optsched",)),  # optsched/__init__.py only
    ("charts", ("optsched.charts",)),  # every PNG: drawn from schema and feature results
    ("infra", ("optsched.infra",)),
    ("service", ("optsched.service", "optsched.adapters")),
    ("faces", ("optsched.cli", "optsched.cli_tables", "optsched.slurm_cli", "api", "optsched.testing")),
    ("harness", ("tests.support",)),  # not installed: the dev extra's servers, fault tools and strategies
    ("tests and benchmarks", ("tests", "bench")),
)

# Narrower rules than the layer order, as (importer prefix, allowed imported prefixes).
ONLY: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("optsched.verify", ("optsched.verify", "optsched.schema")),
    ("optsched.schema", ("optsched.schema",)),
    ("tests.support", ("tests.support", "optsched", "api")),
    # Neither imports the other's modules; bench drives the harness at larger budgets than CI's.
    ("tests", ("tests", "optsched", "api")),
    ("bench", ("bench", "tests.support", "optsched", "api")),
)
# Third-party packages that no module under optsched/ may import (the web framework stays in the faces).
WEB = ("flask", "flask_openapi3", "werkzeug", "gunicorn", "waitress")
# The CLI's `serve` command starts the REST face, the one arrow from optsched/ into api/.
ALLOWED_EXTRA = {("optsched.cli", "api.serve"), ("optsched.cli", "api")}


@dataclass(frozen=True)
class Report:
    cycles: tuple[tuple[str, ...], ...]
    forbidden: tuple[tuple[str, str, str], ...]  # (importer, imported, rule)

    @property
    def ok(self) -> bool:
        return not self.cycles and not self.forbidden


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def layer_of(module: str) -> int:
    """Index of the layer whose longest prefix names `module` (`optsched` alone is the public API)."""
    best, best_len = -1, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            exact_only = prefix == "optsched"
            hit = module == prefix if exact_only else _within(module, prefix)
            if hit and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    if best < 0:
        raise ValueError(f"module {module} is in no layer: add it to LAYERS")
    return best


def _package_of(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "optsched" else parts[0]


def check(graph: grimp.ImportGraph | None = None) -> Report:
    graph = graph or grimp.build_graph(*PACKAGES, include_external_packages=True, exclude_type_checking_imports=True)
    modules = sorted(m for m in graph.modules if m.split(".")[0] in PACKAGES)
    forbidden: list[tuple[str, str, str]] = []
    for importer in modules:
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            rule = _broken_rule(importer, imported)
            if rule:
                forbidden.append((importer, imported, rule))
    return Report(cycles=_cycles(graph, modules), forbidden=tuple(forbidden))


def _broken_rule(importer: str, imported: str) -> str | None:
    top = imported.split(".")[0]
    if top not in PACKAGES:
        if top in WEB and importer.startswith("optsched"):
            return f"nothing under optsched/ imports the web framework ({top})"
        return None
    if (importer, imported) in ALLOWED_EXTRA:
        return None
    for prefix, allowed in ONLY:
        if _within(importer, prefix) and not any(_within(imported, a) for a in allowed):
            return f"{prefix} may import only {', '.join(allowed)}"
    if importer.startswith("optsched") and top == "api":
        return "nothing under optsched/ imports api (the CLI's serve command excepted)"
    low, high = layer_of(imported), layer_of(importer)
    if low > high:
        return f"layer {LAYERS[high][0]} imports the higher layer {LAYERS[low][0]}"
    return None


def _cycles(graph: grimp.ImportGraph, modules: list[str]) -> tuple[tuple[str, ...], ...]:
    """Each strongly connected set of modules (size > 1) once, as a chain found inside it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[tuple[str, ...]] = []
    inside = set(modules)

    def edges(m: str) -> list[str]:
        return sorted(n for n in graph.find_modules_directly_imported_by(m) if n in inside)

    # Iterative Tarjan: recursion would overflow on long chains.
    for root in modules:
        if root in index:
            continue
        work = [(root, iter(edges(root)))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges(child))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    component.append(m)
                    if m == node:
                        break
                if len(component) > 1:
                    found.append(tuple(sorted(component)))
    return tuple(sorted(found))


def main() -> int:
    report = check()
    for name, prefixes in LAYERS:
        sys.stdout.write(f"layer {name}: {', '.join(prefixes)}\n")
    for cycle in report.cycles:
        sys.stdout.write(f"CYCLE: {' <-> '.join(cycle)}\n")
    for importer, imported, rule in report.forbidden:
        sys.stdout.write(f"FORBIDDEN: {importer} -> {imported} ({rule})\n")
    sys.stdout.write(f"{len(report.cycles)} cycles, {len(report.forbidden)} forbidden arrows\n")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
