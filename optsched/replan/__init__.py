"""Re-planning after failures and changes: keep what runs, move as little as it pays to (`replan`)."""

from optsched.replan.replan import check_change, check_growth, move_costs, moved_jobs, replan
from optsched.replan.schema import (
    Change,
    ChangeKind,
    DeviceCount,
    InvalidChange,
    JobChange,
    PinBreak,
    Reason,
    Replan,
    apply_change,
)

__all__ = [
    "Change",
    "ChangeKind",
    "DeviceCount",
    "InvalidChange",
    "JobChange",
    "PinBreak",
    "Reason",
    "Replan",
    "apply_change",
    "check_change",
    "check_growth",
    "move_costs",
    "moved_jobs",
    "replan",
]
