"""Names in prose stay true: every dotted `optsched.*` / `api.*` / `bench.*` name that a comment, a docstring, a
field description (the published OpenAPI carries those), the README, docs/, bench/results, the Makefile or
pyproject.toml cites must resolve, and every repository path cited there or in any other string of the code (text
a benchmark writes) must exist.

A module moved or renamed leaves such names behind; this test lists them all, with where they are cited."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import io
import itertools
import re
import tokenize
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCE_DIRS = ("optsched", "api", "bench", "tests")

# A dotted name: `optsched`, `api` or `bench`, then one or more attributes. Not inside a longer word, path or URL.
DOTTED = re.compile(r"(?<![\w./-])(?:optsched|api|bench)(?:\.[A-Za-z_]\w*)+")
# A repository path: a top-level folder of the repository, a slash, then path characters (globs, `...` and shell
# braces allowed); not inside a URL or a longer path.
PATH = re.compile(r"(?<![\w./:-])(?:optsched|api|bench|tests|models|docs)/(?:[\w.*{},-]+/?)*[\w*}]")
BRACES = re.compile(r"\{([^{}]*)\}")


def _python_files() -> list[Path]:
    # This file's own examples of stale names are meant to be stale.
    here = Path(__file__).resolve()
    return sorted(p for d in SOURCE_DIRS for p in (ROOT / d).rglob("*.py") if p != here)


def _text_files() -> list[Path]:
    """The documents, and the build files whose comments name files and modules."""
    documents = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *(ROOT / "bench/results").glob("*.md")]
    return [*documents, ROOT / "Makefile", ROOT / "pyproject.toml"]


def _comments(source: str) -> Iterator[tuple[int, str]]:
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def _strings_of_python(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of every comment and string constant of a Python file."""
    source = path.read_text()
    yield from _comments(source)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value


def _prose_of_python(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of every comment, docstring and `description=` string of a Python file (other strings are
    also logger names, extension keys and such, which need not be importable)."""
    source = path.read_text()
    yield from _comments(source)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                if isinstance(body[0].value.value, str):
                    yield body[0].lineno, body[0].value.value
        elif isinstance(node, ast.keyword) and node.arg == "description":
            for part in ast.walk(node.value):
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    yield part.lineno, part.value


def _text() -> Iterator[tuple[str, str]]:
    for path in _text_files():
        for line, text in enumerate(path.read_text().splitlines(), start=1):
            yield f"{path.relative_to(ROOT)}:{line}", text


def _cited(texts: Iterable[tuple[str, str]], pattern: re.Pattern[str]) -> dict[str, list[str]]:
    """Each match of `pattern` in the texts, with where it was found."""
    found: dict[str, list[str]] = {}
    for where, text in texts:
        for match in pattern.findall(text):
            found.setdefault(match, []).append(where)
    return found


def _in_python(read: Callable[[Path], Iterator[tuple[int, str]]]) -> Iterator[tuple[str, str]]:
    for path in _python_files():
        for line, text in read(path):
            yield f"{path.relative_to(ROOT)}:{line}", text


@cache
def _citations() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(dotted names, repository paths), each with where it is cited."""
    names = _cited(itertools.chain(_in_python(_prose_of_python), _text()), DOTTED)
    paths = _cited(itertools.chain(_in_python(_strings_of_python), _text()), PATH)
    return names, paths


def resolves(name: str) -> bool:
    """An importable module, or attributes of one (a class's fields count: pydantic and dataclasses keep them
    off the class)."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            continue
        obj: object = importlib.import_module(module)
        for attr in parts[cut:]:
            fields = {**getattr(obj, "model_fields", {}), **getattr(obj, "__dataclass_fields__", {})}
            if hasattr(obj, attr):
                obj = getattr(obj, attr)
            elif attr in fields or attr in getattr(obj, "__annotations__", {}):
                return attr == parts[-1]  # a field without a class attribute: nothing further to look into
            else:
                return False
        return True
    return False


def exists(path: str) -> bool:
    """A file or folder of the repository; a glob or a `...` form must match at least one, and each alternative
    of a `{a,b}` form must exist."""
    braces = BRACES.search(path)
    if braces:
        return all(
            exists(path[: braces.start()] + choice + path[braces.end() :]) for choice in braces.group(1).split(",")
        )
    pattern = path.rstrip("/").replace("...", "**")
    if "*" in pattern:
        return any(ROOT.glob(pattern))
    return (ROOT / pattern).exists()


@pytest.mark.slow  # scans every comment, docstring and page of the repository: seconds
def test_the_test_sees_names_and_paths():
    names, paths = _citations()
    assert "optsched.replan.replan" in names and "optsched.charts" in names
    assert "bench/results/planner.md" in paths and "bench/results/viewer-{night,plan,frontier}.png" in paths


def test_resolver_and_path_check_tell_real_from_stale():
    assert resolves("optsched.schema.workload.Workload.load") and resolves("optsched.Workload.jobs")
    assert not resolves("optsched.jobs") and not resolves("optsched.Workload.no_such_field")
    assert exists("optsched/schema/workload.py") and exists("tests/*.py") and exists("optsched/.../plan.py")
    assert exists("bench/results/viewer-{night,plan}.png") and not exists("bench/results/viewer-{plan,nothing}.png")
    assert not exists("docs/nothing-here.md") and not exists("tests/no_such_*.py")


@pytest.mark.slow  # scans every comment, docstring and page of the repository: seconds
def test_every_dotted_name_in_prose_resolves():
    names, _ = _citations()
    stale = {name: where for name, where in sorted(names.items()) if not resolves(name)}
    assert not stale, "\n".join(f"{name}: cited at {', '.join(where)}" for name, where in stale.items())


@pytest.mark.slow  # scans every comment, docstring and page of the repository: seconds
def test_every_repository_path_in_prose_exists():
    _, paths = _citations()
    missing = {path: where for path, where in sorted(paths.items()) if not exists(path)}
    assert not missing, "\n".join(f"{path}: cited at {', '.join(where)}" for path, where in missing.items())


@pytest.mark.parametrize(
    "text, expected", [("see `optsched.jobs.KINDS`.", ["optsched.jobs.KINDS"]), ("https://x/api.v1", [])]
)
def test_dotted_names_are_cut_at_punctuation_and_not_taken_from_urls(text, expected):
    assert DOTTED.findall(text) == expected
