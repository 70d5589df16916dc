"""optsched: place jobs on heterogeneous accelerators under power budgets and deadlines (MILP, Pyomo + HiGHS)."""

from optsched.errors import FieldError, InvalidPlan, InvalidWorkload, OptschedError
from optsched.frontier import Frontier, FrontierPoint, frontier
from optsched.night import NightPlan, plan_night
from optsched.objectives import OBJECTIVES
from optsched.plan import Allocation, DeviceUse, Placement, Plan, Status
from optsched.planner import plan
from optsched.verify import verify
from optsched.workload import DeviceGroup, Job, Options, Power, PowerLevel, Priority, Workload

__all__ = [
    "OBJECTIVES",
    "Allocation",
    "DeviceGroup",
    "DeviceUse",
    "FieldError",
    "Frontier",
    "FrontierPoint",
    "InvalidPlan",
    "InvalidWorkload",
    "Job",
    "NightPlan",
    "OptschedError",
    "Options",
    "Placement",
    "Plan",
    "Power",
    "PowerLevel",
    "Priority",
    "Status",
    "Workload",
    "frontier",
    "plan",
    "plan_night",
    "verify",
]

