"""`optsched night`: outputs, determinism, the interrupted-run guarantee and exit codes (0 met, 1 misses, 2 invalid)."""

from __future__ import annotations

import json
import os

import pytest
from typer.testing import CliRunner

from optsched.cli import app
from optsched.service import outputs as files
from optsched.verify.timeline import verify_timeline
from tests.night.test_night_budget import ten_jobs
from tests.night.test_night_exact import blocked_queue, hand_queue, preemption_queue

runner = CliRunner()
OUTPUTS = {"timeline.json", "segments.csv", "summary.json", "gantt.png", "power.png", ".optsched-night"}


def night(tmp_path, queue, out="plans/night", *extra):
    path = tmp_path / "queue.json"
    path.write_text(json.dumps(queue) if not isinstance(queue, str) else queue)
    args = ["night", str(path), "--start", "2026-12-01T22:00", "--hours", "8", "--out", str(tmp_path / out), *extra]
    return runner.invoke(app, args)


def contents(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def leftovers(tmp_path) -> list[str]:
    return sorted(p.name for p in (tmp_path / "plans").iterdir() if p.name.startswith("."))


def test_writes_every_output_and_exits_0_when_every_hard_deadline_is_met(tmp_path):
    result = night(tmp_path, hand_queue())
    assert result.exit_code == 0, result.output
    out = tmp_path / "plans" / "night"
    assert set(contents(out)) == OUTPUTS
    assert "met - 3 jobs" in result.stdout
    assert verify_timeline(hand_queue(), out) == []
    rows = (out / "segments.csv").read_text().splitlines()
    assert rows[0].startswith("job,priority,segment,from_hours,to_hours,from,to,device,count,devices,cap_w")
    assert len(rows) == 1 + 4  # A, B and C's two segments, one device group each
    assert (out / "gantt.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert leftovers(tmp_path) == []


def test_two_runs_write_identical_bytes(tmp_path):
    assert night(tmp_path, hand_queue(), "plans/first").exit_code == 0
    assert night(tmp_path, hand_queue(), "plans/second").exit_code == 0
    assert contents(tmp_path / "plans" / "first") == contents(tmp_path / "plans" / "second")


def test_a_budget_the_first_timeline_spends_is_said_on_stderr_and_in_the_timeline(tmp_path):
    result = night(tmp_path, ten_jobs(), "plans/night", "--budget", "0.001")
    assert result.exit_code in (0, 1), result.output
    timeline = json.loads((tmp_path / "plans" / "night" / "timeline.json").read_text())
    assert "milp" in timeline["budget_cut"] and timeline["chosen"] == "dispatch-priority"
    assert "the planning budget stopped or left unrun:" in result.stderr and "milp" in result.stderr
    assert verify_timeline(ten_jobs(), tmp_path / "plans" / "night") == []
    assert "planning budget" not in night(tmp_path, hand_queue(), "plans/whole").stderr


def test_misses_exit_1_with_the_reason_and_preemption_fixes_them(tmp_path):
    missed = night(tmp_path, blocked_queue())
    assert missed.exit_code == 1
    assert "critical job 'C':" in missed.stderr and "held by 'L'" in missed.stderr
    summary = json.loads((tmp_path / "plans" / "night" / "summary.json").read_text())
    assert summary["status"] == "missed" and summary["hard_deadlines_missed"] == ["C"]
    fixed = night(tmp_path, blocked_queue(), "plans/night", "--preempt", "--restart-hours", "0.1")
    assert fixed.exit_code == 0, fixed.output


@pytest.mark.parametrize(
    "queue, extra, expected",
    [
        (
            {
                "name": "x",
                "devices": [{"id": "g", "model": "m", "count": 1, "power_levels": [{"cap_w": 1, "speed": 1}]}],
                "jobs": [
                    {"id": "a", "work_hours": 1, "parallel_fraction": 1, "after": ["b"]},
                    {"id": "b", "work_hours": 1, "parallel_fraction": 1, "after": ["a"]},
                ],
            },
            [],
            "dependency cycle through jobs ['a', 'b']",
        ),
        ("{not json", [], "not valid JSON"),
        (None, ["--start", "tonight"], "is not an ISO 8601 date-time"),
        (None, ["--hours", "0"], "positive, finite number of hours"),
    ],
)
def test_invalid_input_exits_2_listing_the_problem_without_traceback(tmp_path, queue, extra, expected):
    result = night(tmp_path, hand_queue() if queue is None else queue, "plans/night", *extra)
    assert result.exit_code == 2, result.output
    assert expected in result.stderr and "Traceback" not in result.output
    assert not (tmp_path / "plans" / "night").exists()


def test_an_interrupted_run_leaves_the_old_outputs_and_no_temporary_directory(tmp_path, monkeypatch):
    assert night(tmp_path, hand_queue()).exit_code == 0
    before = contents(tmp_path / "plans" / "night")
    written, write = [], files._write_file

    def dies_on_the_third_file(path, data):
        if len(written) == 2:
            raise KeyboardInterrupt  # Ctrl-C while writing
        written.append(path.name)
        write(path, data)

    monkeypatch.setattr(files, "_write_file", dies_on_the_third_file)
    with pytest.raises(KeyboardInterrupt):
        files.write_night_outputs(_plan(preemption_queue()), tmp_path / "plans" / "night")
    assert written == ["timeline.json", "segments.csv"]
    assert contents(tmp_path / "plans" / "night") == before
    assert leftovers(tmp_path) == []


def test_a_run_killed_between_the_two_renames_is_repaired_by_the_next_run(tmp_path, monkeypatch):
    """Where the atomic exchange is missing, the old directory is renamed aside first; if the process dies right
    then, the next run puts the old outputs back before anything else (and cleans what the dead run left)."""
    out = tmp_path / "plans" / "night"
    assert night(tmp_path, hand_queue()).exit_code == 0
    before = contents(out)
    monkeypatch.setattr(files, "_exchange", lambda a, b: False)
    real_rename = os.rename
    calls = []

    def killed_on_the_second_rename(src, dst):
        calls.append(src)
        if len(calls) == 2:
            raise SystemExit("killed")
        real_rename(src, dst)

    monkeypatch.setattr(files.os, "rename", killed_on_the_second_rename)
    with pytest.raises(SystemExit):
        files.write_night_outputs(_plan(preemption_queue()), out)
    monkeypatch.setattr(files.os, "rename", real_rename)
    assert not out.exists()
    dead = 2**22 + 12345  # above the default pid_max: no live process has it
    for stale in (tmp_path / "plans").glob(".night.*-*"):
        kind, rest = stale.name[len(".night.") :].split("-", 1)
        stale.rename(stale.with_name(f".night.{kind}-{dead}-{rest.split('-', 1)[1]}"))
    files._remove_stale(out)
    assert contents(out) == before and leftovers(tmp_path) == []


def _plan(queue):
    from tests.night.conftest import night_checked

    return night_checked(queue)


@pytest.mark.slow
def test_two_processes_with_different_hash_seeds_write_identical_bytes(tmp_path):
    import subprocess
    import sys

    queue = tmp_path / "queue.json"
    queue.write_text(json.dumps(preemption_queue()))
    for seed, out in (("1", "first"), ("2", "second")):
        code = "from optsched.cli import app; app()"
        args = [sys.executable, "-c", code, "night", str(queue), "--start", "2026-12-01T22:00", "--hours", "8"]
        done = subprocess.run(
            [*args, "--out", str(tmp_path / out), "--preempt"],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
    assert contents(tmp_path / "first") == contents(tmp_path / "second")
