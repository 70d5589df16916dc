"""optsched: place jobs on heterogeneous accelerators under power budgets and deadlines (MILP, Pyomo + HiGHS)."""

import logging

from optsched.explain.frontier import Frontier, FrontierPoint, frontier
from optsched.explain.planning import plan
from optsched.explain.pyomo_model import pyomo_model
from optsched.model.objectives import OBJECTIVES
from optsched.night import NightPlan, plan_night
from optsched.replan import Change, Replan, replan
from optsched.schema.errors import FieldError, InvalidPlan, InvalidWorkload, OptschedError
from optsched.schema.plan import Allocation, DeviceUse, Placement, Plan, Status
from optsched.schema.workload import DeviceGroup, Job, Options, Power, PowerLevel, Priority, Workload
from optsched.solve.options import SolveOptions
from optsched.verify.placement import verify

# A library logs; the application decides where it goes (no "last resort" output on stderr).
logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "OBJECTIVES",
    "Allocation",
    "Change",
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
    "Replan",
    "SolveOptions",
    "Status",
    "Workload",
    "frontier",
    "plan",
    "plan_night",
    "replan",
    "pyomo_model",
    "verify",
]

