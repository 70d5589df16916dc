"""The shipped node Prolog, run as slurmd runs it: the cap from the job's comment, per node or for all, set
with nvidia-smi where it exists and recorded otherwise; it never fails the job."""

from __future__ import annotations

import subprocess
from importlib import resources
from pathlib import Path

import pytest

PROLOG = resources.files("optsched.adapters.slurm").joinpath("prolog.sh")


def run_prolog(tmp_path: Path, comment: str, node: str = "n2", nvidia_smi: bool = False) -> str:
    (tmp_path / "slurm.conf").write_text("")
    log = tmp_path / "prolog.log"
    (tmp_path / "optsched-prolog.conf").write_text(f"OPTSCHED_PROLOG_LOG={log}\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    if nvidia_smi:
        fake = bin_dir / "nvidia-smi"
        fake.write_text(f'#!/bin/bash\necho "$@" > {tmp_path}/nvidia-smi.args\n')
        fake.chmod(0o755)
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "SLURM_CONF": str(tmp_path / "slurm.conf"),
        "SLURM_JOB_ID": "7",
        "SLURMD_NODENAME": node,
        "SLURM_JOB_COMMENT": comment,
        "CUDA_VISIBLE_DEVICES": "0,1",
    }
    done = subprocess.run(["bash", str(PROLOG)], env=env, capture_output=True, text=True, timeout=10)
    assert done.returncode == 0, done.stderr
    return log.read_text()


@pytest.mark.parametrize(
    ("comment", "cap"),
    [
        ("optsched:work_hours=3,parallel_fraction=0.9,powercap=300", "300"),
        ("note optsched:work_hours=3,powercap=n1@300/n2@250,parallel_fraction=0.9", "250"),
        ("optsched:work_hours=3,powercap=n1@300", "none"),
        ("optsched:work_hours=3,powercap=300;reboot", "none"),
        ("", "none"),
    ],
)
def test_the_cap_for_this_node_is_recorded_where_nvidia_smi_is_missing(tmp_path, comment, cap):
    line = run_prolog(tmp_path, comment)
    assert line.startswith(f"job=7 node=n2 gpus=0,1 powercap={cap} action=")
    action = f"would-run: nvidia-smi -i 0,1 -pl {cap}" if cap != "none" else "none"
    assert line.rstrip("\n").endswith(f"action={action}")


def test_nvidia_smi_sets_the_cap_where_it_exists(tmp_path):
    line = run_prolog(tmp_path, "optsched:work_hours=3,parallel_fraction=0.9,powercap=275", nvidia_smi=True)
    assert line.rstrip("\n").endswith("powercap=275 action=applied")
    assert (tmp_path / "nvidia-smi.args").read_text().split() == ["-i", "0,1", "-pl", "275"]
