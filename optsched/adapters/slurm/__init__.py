"""Slurm in and out: read the fleet and the held jobs from Slurm (`import_cluster`), carry plans out on them
(`apply_plan`, `apply_night`), plan the night (`run_night`) and re-plan when nodes fail (`watch_once`).
Every Slurm command goes through one `SlurmRunner`."""

from optsched.adapters.slurm.apply import ApplyReport, JobAction, Outcome, apply_night, apply_plan
from optsched.adapters.slurm.loop import NightRun, WatchDecision, WatchState, plan_for_slurm, run_night, watch_once
from optsched.adapters.slurm.reader import ImportResult, Skipped, import_cluster
from optsched.adapters.slurm.runner import SlurmError, SlurmInputError, SlurmRunner
from optsched.adapters.slurm.shape import one_node_per_job
from optsched.adapters.slurm.site import DEFAULT_TYPES, Site

__all__ = [
    "DEFAULT_TYPES",
    "ApplyReport",
    "ImportResult",
    "JobAction",
    "NightRun",
    "Outcome",
    "Site",
    "Skipped",
    "SlurmError",
    "SlurmInputError",
    "SlurmRunner",
    "WatchDecision",
    "WatchState",
    "apply_night",
    "apply_plan",
    "import_cluster",
    "one_node_per_job",
    "plan_for_slurm",
    "run_night",
    "watch_once",
]
