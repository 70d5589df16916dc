"""The nightly batch planner: the queue as a timeline, re-planned with the core MILP at every event."""

from optsched.night.engine import Decision, Policy, Progress, View, simulate
from optsched.night.milp import MilpPolicy, plan_night, validate_night
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
