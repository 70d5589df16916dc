"""optsched: place jobs on heterogeneous accelerators under power budgets and deadlines (MILP, Pyomo + HiGHS)."""

from optsched.errors import FieldError, InvalidPlan, InvalidWorkload, OptschedError
from optsched.objectives import OBJECTIVES
from optsched.plan import Allocation, DeviceUse, Placement, Plan, Status
from optsched.planner import plan
from optsched.workload import DeviceGroup, Job, Options, Power, PowerLevel, Priority, Workload

__all__ = [
    "OBJECTIVES",
    "Allocation",
    "DeviceGroup",
    "DeviceUse",
    "FieldError",
    "InvalidPlan",
    "InvalidWorkload",
    "Job",
    "OptschedError",
    "Options",
    "Placement",
    "Plan",
    "Power",
    "PowerLevel",
    "Priority",
    "Status",
    "Workload",
    "plan",
    "verify",
]


def __getattr__(name: str):
    # The verifier lives in its own module and is imported lazily so the model code never depends on it.
    if name == "verify":
        from optsched.verify import verify

        return verify
    raise AttributeError(name)
