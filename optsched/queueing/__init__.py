"""Power against response time under arrivals: priority classes on a pool of GPU servers, each class under its
own power cap; mean waits and responses analytically (closed forms, else the Bondi-Buzen approximation) or by
simulation (ciw), and the caps that minimise mean power under response-time targets.

    from optsched.queueing import analyze
    result = analyze("models/studies/season.json", method="analytic")
"""

from optsched.queueing.schema import (
    ClassResult,
    Discipline,
    FrontPoint,
    Method,
    SimulationInfo,
    Study,
    StudyClass,
    StudyResult,
    StudyStatus,
    load_study,
)
from optsched.queueing.study import analyze, check_study, evaluate, pareto_front

__all__ = [
    "ClassResult",
    "Discipline",
    "FrontPoint",
    "Method",
    "SimulationInfo",
    "StudyStatus",
    "Study",
    "StudyClass",
    "StudyResult",
    "analyze",
    "check_study",
    "evaluate",
    "load_study",
    "pareto_front",
]
