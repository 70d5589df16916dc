"""`optsched slurm import | plan | apply --dry-run | apply | watch --once` on the real cluster, exit codes included."""

from __future__ import annotations

import json

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
