"""`optsched slurm import | plan | apply --dry-run | apply | watch --once` on the real cluster, exit codes included."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from typer.testing import CliRunner

from optsched.cli import app
from tests.slurm.conftest import REPORT, SITE

pytestmark = pytest.mark.slow


def test_import_plan_dry_run_apply_and_bad_input(slurm, tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_CONF", str(slurm.conf))
    site = tmp_path / "site.json"
    site.write_text(json.dumps(SITE))
    job = slurm.sbatch(
        "--hold",
        "--gres=gpu:2",
        "-J",
        "t",
        "-o",
        "/dev/null",
        "--comment=optsched:work_hours=2,parallel_fraction=0.9",
        script=REPORT.format(out=slurm.out),
    )
    bare = slurm.sbatch("--hold", "--gres=gpu:1", "-J", "bare", "-o", "/dev/null", script=REPORT.format(out=slurm.out))
    cli = CliRunner()
    w, p = tmp_path / "w.json", tmp_path / "p.json"
    done = cli.invoke(app, ["slurm", "import", "--site", str(site), "-o", str(w)])
    assert done.exit_code == 0, done.output
    assert f"left out: job {bare} (bare): has no profile" in done.output
    assert cli.invoke(app, ["slurm", "plan", str(w), "-o", str(p), "--time-limit", "5"]).exit_code == 0

    dry = cli.invoke(app, ["slurm", "apply", str(w), str(p), "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert f"scontrol update jobid={job} NumNodes=1 ReqNodeList=" in dry.output
    assert f"scontrol release {job}" in dry.output
    assert cli.invoke(app, ["slurm", "apply", str(w), str(p), "--state", str(tmp_path / "s")]).exit_code == 0
    again = cli.invoke(app, ["slurm", "apply", str(w), str(p), "--dry-run"])
    assert "scontrol" not in again.output.replace("`scontrol", "")
    watched = cli.invoke(app, ["slurm", "watch", "--site", str(site), "--state", str(tmp_path / "s"), "--once"])
    assert watched.exit_code == 0, watched.output

    site.write_text(json.dumps({"domains": [{"id": "a", "nodes": ["n1"]}, {"id": "b", "nodes": ["n1"]}]}))
    bad = cli.invoke(app, ["slurm", "import", "--site", str(site), "-o", str(w)])
    assert bad.exit_code == 2 and "node 'n1' is in domains 'a' and 'b'" in bad.output


def test_night_dry_run_prints_begin_times_and_changes_nothing(slurm, tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_CONF", str(slurm.conf))
    site = tmp_path / "site.json"
    site.write_text(json.dumps(SITE))
    jobs = [
        slurm.sbatch(
            "--hold",
            "--gres=gpu:4",
            "-J",
            f"n{i}",
            "-o",
            "/dev/null",
            "--comment=optsched:work_hours=2,parallel_fraction=0.9",
            script=REPORT.format(out=slurm.out),
        )
        for i in range(6)
    ]
    start = datetime.now().astimezone().isoformat(timespec="seconds")
    out = tmp_path / "night"
    done = CliRunner().invoke(
        app, ["slurm", "night", "--site", str(site), "--start", start, "--hours", "8", "--out", str(out), "--dry-run"]
    )
    assert done.exit_code == 0, done.output
    assert all(f"scontrol release {j}" in done.output for j in jobs)
    assert done.output.count("StartTime=") == len(jobs)
    assert (out / "timeline.json").exists() and (out / "slurm-import.json").exists()
    listed = slurm.scontrol("show", "job", jobs[0])
    assert "JobHeldUser" in listed and "Features=(null)" in listed
