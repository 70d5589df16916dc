"""optsched: place jobs on heterogeneous accelerators under power budgets and deadlines (MILP, Pyomo + HiGHS)."""

from optsched.schema.errors import FieldError, InvalidPlan, InvalidWorkload, OptschedError
from optsched.explain.frontier import Frontier, FrontierPoint, frontier
from optsched.night import NightPlan, plan_night
from optsched.model.objectives import OBJECTIVES
from optsched.schema.plan import Allocation, DeviceUse, Placement, Plan, Status
from optsched.explain.planning import plan
from optsched.verify.placement import verify
from optsched.schema.workload import DeviceGroup, Job, Options, Power, PowerLevel, Priority, Workload

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

