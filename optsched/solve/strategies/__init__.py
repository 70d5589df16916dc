"""Search strategies behind one interface (`Strategy.solve`), chosen in one place: `choose_strategy`."""

from optsched.solve.strategies.base import Report, SolveFn, Strategy
from optsched.solve.strategies.choose import STRATEGIES, choose_strategy
from optsched.solve.strategies.columns import ColumnGeneration
from optsched.solve.strategies.direct import DirectMilp
from optsched.solve.strategies.heuristic import HeuristicOnly
from optsched.solve.strategies.parts import Parts

__all__ = [
    "STRATEGIES", "ColumnGeneration", "DirectMilp", "HeuristicOnly", "Parts", "Report", "SolveFn", "Strategy",
    "choose_strategy",
]
