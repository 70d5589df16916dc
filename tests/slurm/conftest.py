"""The local Slurm cluster (tests/slurm/cluster.py): started once per session, cleaned between tests."""

from __future__ import annotations

import time

import pytest

from optsched.adapters.slurm import Site, SlurmRunner
from tests.slurm.cluster import LocalSlurm, slurm_installed

SITE = {
    "budget_w": 3000,
    "domains": [
        {"id": "rack1", "nodes": ["n1", "n2"], "budget_w": 2200},
        {"id": "rack2", "nodes": ["n3", "n4"], "budget_w": 600},
    ],
    "priorities": {"urgent": "high"},
}
# The job script: where it ran and which GPUs it saw, for the test to compare with the plan.
REPORT = (
    '#!/bin/bash\necho "node=$SLURMD_NODENAME gpus=$SLURM_JOB_GPUS cuda=$CUDA_VISIBLE_DEVICES" > {out}/$SLURM_JOB_ID\n'
)


@pytest.fixture(scope="session")
def local_slurm():
    if not slurm_installed():
        pytest.skip("slurmctld, slurmd or munged is not installed (apt-get install slurm-wlm munge)")
    cluster = LocalSlurm().start()
    yield cluster
    cluster.stop()


@pytest.fixture
def slurm(local_slurm: LocalSlurm) -> LocalSlurm:
    """The cluster with no job and every node back in service."""
    local_slurm.cancel_all()
    local_slurm.resume_all()
    local_slurm.prolog_log.unlink(missing_ok=True)
    end = time.monotonic() + 30
    while not local_slurm.all_idle() and time.monotonic() < end:
        time.sleep(0.2)
    return local_slurm


@pytest.fixture
def runner(slurm: LocalSlurm) -> SlurmRunner:
    return SlurmRunner(slurm_conf=str(slurm.conf))


@pytest.fixture
def site() -> Site:
    return Site.load(SITE)
