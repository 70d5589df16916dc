"""The terminal for people: tables fit the width without cutting ids, progress shows on a terminal until the command
is done (files written included), and nothing extra appears when the output is piped."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

import optsched
from optsched.cli import app
from optsched.cli_tables import TABLE_MIN_WIDTH, print_plan_table
from optsched.schema.catalog import sample_workload_path
from optsched.verify.placement import verify
from tests.api.helpers import night_queue, tiny_workload
from tests.support.factories import device, job, workload

OPTSCHED = Path(sys.executable).with_name("optsched")
LONG_IDS = [f"a-very-long-training-job-identifier-{i}-of-the-nightly-recommendation-sweep" for i in range(3)]


@pytest.fixture(scope="module")
def long_plan():
    data = workload(
        [device("gpu-group-with-a-rather-long-name", "m", 4, [(100, 1.0), (200, 1.5)])],
        [job(i, work=2, p=0.9) for i in LONG_IDS] + [job("x", work=50, p=0.1)],
        power={"budget_w": 600},
    )
    plan = optsched.plan(data)
    assert verify(data, plan) == []
    return plan


def rendered(plan, width: int) -> str:
    console = Console(width=width, file=io.StringIO(), record=True, color_system=None)
    print_plan_table(plan, console)
    text = console.export_text()
    assert all(len(line) <= width for line in text.splitlines()), text
    assert "…" not in text, text
    return text


@pytest.mark.parametrize("width", [TABLE_MIN_WIDTH, 100, 160])
def test_the_plan_table_wraps_ids_to_the_width_and_cuts_none(long_plan, width):
    text = rendered(long_plan, width)
    body = [line for line in text.splitlines() if line.startswith("│")]
    jobs: list[str] = []
    for line in body[: len(body)]:
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) != 7:
            break  # the power table
        if cells[1]:  # a job's first line has its priority
            jobs.append(cells[0])
        else:
            jobs[-1] += cells[0]
    assert jobs == [p.job for p in long_plan.placements]


@pytest.mark.parametrize("width", [40, 60, TABLE_MIN_WIDTH - 1])
def test_on_a_narrow_terminal_each_job_is_a_block_with_its_whole_id(long_plan, width):
    text = rendered(long_plan, width)
    joined = text.replace("\n", "")
    for p in long_plan.placements:
        assert p.job in joined
        for a in p.allocations:
            assert f"{a.device} {a.count}x{a.cap_w:g}W" in joined


@pytest.mark.slow
def test_piped_commands_print_no_progress(tmp_path):
    runner = CliRunner()
    plan_file = tmp_path / "w.json"
    plan_file.write_text(json.dumps(tiny_workload()))
    piped = runner.invoke(app, ["plan", str(plan_file)])
    assert piped.exit_code == 0, piped.output
    assert verify(json.loads(plan_file.read_text()), json.loads(piped.stdout)) == []
    assert piped.stderr == ""

    queue_file = tmp_path / "q.json"
    queue_file.write_text(json.dumps(night_queue()))
    night = runner.invoke(app, ["night", str(queue_file), "--start", "2026-12-01T22:00", "--hours", "8",
                                "--out", str(tmp_path / "night")])
    assert night.exit_code in (0, 1), night.output
    assert "planning the night" not in night.stderr and "writing" not in night.stderr
    assert night.stdout.startswith("q: ")

    frontier = runner.invoke(app, ["frontier", str(plan_file), "--time-limit", "5"])
    assert frontier.exit_code == 0, frontier.output
    assert json.loads(frontier.stdout)["points"]
    assert "planning the frontier" not in frontier.stderr


def on_a_terminal(args: list[str], timeout_s: float = 120.0) -> tuple[int, str]:
    """Run `optsched ARGS` with a pseudo-terminal for stdin, stdout and stderr; (exit code, everything it wrote)."""
    main, child = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    process = subprocess.Popen([str(OPTSCHED), *args], stdin=child, stdout=child, stderr=child, env=env,
                               close_fds=True)
    os.close(child)
    chunks, deadline = [], time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([main], [], [], 0.5)
            if ready:
                try:
                    data = os.read(main, 65536)
                except OSError:  # the child closed the terminal
                    break
                if not data:
                    break
                chunks.append(data)
            elif process.poll() is not None:
                break
        code = process.wait(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        os.close(main)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode("utf-8", "replace"))
    return code, text


@pytest.mark.slow
def test_on_a_terminal_plan_shows_incumbent_bound_and_gap_while_it_solves(tmp_path):
    data = json.loads(sample_workload_path("demo").read_text())
    data["options"] = {**data.get("options", {}), "time_limit_s": 20}
    path = tmp_path / "demo.json"
    path.write_text(json.dumps(data))
    code, text = on_a_terminal(["plan", str(path), "-o", str(tmp_path / "plan.json"), "--table"])
    assert code == 0, text
    assert verify(data, json.loads((tmp_path / "plan.json").read_text())) == []
    assert re.search(r"planning .*incumbent [\d,.]+, bound [\d,.]+, gap [\d.]+%", text), text
    assert "speedup" in text.split("incumbent")[-1]  # the table comes after the live line


@pytest.mark.slow
def test_on_a_terminal_night_and_frontier_show_progress_until_their_files_are_written(tmp_path):
    queue = tmp_path / "q.json"
    queue.write_text(json.dumps(night_queue()))
    out = tmp_path / "night"
    code, text = on_a_terminal(["night", str(queue), "--start", "2026-12-01T22:00", "--hours", "8", "--out", str(out)])
    assert code in (0, 1), text
    assert "planning the night" in text
    writing, summary = text.index(f"writing {out}/"), text.index(f"wrote {out}/")
    assert writing < summary and (out / "gantt.png").exists()

    workload_file = tmp_path / "w.json"
    workload_file.write_text(json.dumps(tiny_workload()))
    png = tmp_path / "frontier.png"
    code, text = on_a_terminal(["frontier", str(workload_file), "-o", str(tmp_path / "f.json"), "--png", str(png)])
    assert code == 0, text
    assert "planning the frontier" in text and "writing the frontier" in text
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
