"""`optsched night --out` replaces only a directory it wrote (the marker file says so): never `.`, `..`, a symlink
or someone else's directory, and a refused or failed run leaves nothing temporary behind."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from api.examples import NIGHT_QUEUE
from optsched.cli import app
from optsched.service.outputs import MARKER

OUTPUTS = {"timeline.json", "segments.csv", "summary.json", "gantt.png", "power.png", MARKER}


def night(tmp_path: Path, out: str, cwd: Path | None = None):
    queue = tmp_path / "queue.json"
    queue.write_text(json.dumps(NIGHT_QUEUE))
    here = Path.cwd()
    os.chdir(cwd or tmp_path)
    try:
        return CliRunner().invoke(
            app, ["night", str(queue), "--start", "2026-12-01T22:00", "--hours", "4", "--out", out]
        )
    finally:
        os.chdir(here)


def entries(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


@pytest.mark.slow
def test_a_new_directory_is_written_with_its_marker_and_replaced_by_the_next_run(tmp_path):
    first = night(tmp_path, "plans/tonight")
    assert first.exit_code in (0, 1), first.output
    out = tmp_path / "plans" / "tonight"
    assert entries(out) == OUTPUTS
    old = (out / "timeline.json").read_bytes()
    assert night(tmp_path, "plans/tonight").exit_code in (0, 1)
    assert entries(out) == OUTPUTS and (out / "timeline.json").read_bytes() == old
    assert entries(tmp_path / "plans") == {"tonight"}  # nothing temporary beside it


@pytest.mark.parametrize("target", [".", "..", "./", "sub/..", "sub/../.."])
def test_dot_and_dotdot_are_refused_before_anything_is_written(tmp_path, target):
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    (work / "keep.txt").write_text("mine")
    (tmp_path / "queue.json").write_text(json.dumps(NIGHT_QUEUE))
    before = {p: sorted(os.listdir(p)) for p in (tmp_path, work, work / "sub")}
    result = night(tmp_path, target, cwd=work)
    assert result.exit_code == 2, result.output
    assert "cannot write" in result.output
    assert {p: sorted(os.listdir(p)) for p in before} == before
    assert (work / "keep.txt").read_text() == "mine"


def test_a_symlink_is_refused_and_its_target_left_alone(tmp_path):
    target = tmp_path / "real"
    target.mkdir()
    (target / "data.csv").write_text("1,2\n")
    (tmp_path / "link").symlink_to(target, target_is_directory=True)
    result = night(tmp_path, "link")
    assert result.exit_code == 2 and "symbolic link" in result.output
    assert (tmp_path / "link").is_symlink() and entries(target) == {"data.csv"}
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_an_existing_directory_without_the_marker_is_refused_even_when_empty(tmp_path):
    for name, files in (("theirs", {"notes.txt": "do not delete"}), ("empty", {})):
        folder = tmp_path / name
        folder.mkdir()
        for file, text in files.items():
            (folder / file).write_text(text)
        result = night(tmp_path, name)
        assert result.exit_code == 2 and MARKER in result.output, result.output
        assert entries(folder) == set(files)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
