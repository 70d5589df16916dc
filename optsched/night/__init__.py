"""The nightly batch planner: the queue as a timeline, planned event by event by candidate policies (the core
MILP, completion-aware dispatch) through one engine, the best timeline kept."""

from optsched.night.dispatch import DispatchPolicy
from optsched.night.engine import Decision, Policy, Progress, View, simulate
from optsched.night.milp import MilpPolicy, validate_night
from optsched.night.planner import plan_night
from optsched.schema.night import (
    JobTimeline,
    NightEvent,
    NightPlan,
    NightStatus,
    NightSummary,
    Segment,
    SegmentAllocation,
)

__all__ = [
    "Decision",
    "DispatchPolicy",
    "JobTimeline",
    "MilpPolicy",
    "NightEvent",
    "NightPlan",
    "NightStatus",
    "NightSummary",
    "Policy",
    "Progress",
    "Segment",
    "SegmentAllocation",
    "View",
    "plan_night",
    "simulate",
    "validate_night",
]
