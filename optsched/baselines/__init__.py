"""Baselines an optimiser must beat: placement rules (one instant) and night-queue rules (a timeline)."""

from optsched.baselines.night import NIGHT_BASELINES, conservative, easy, edf, fifo
from optsched.baselines.placement import BASELINES, deadline_greedy, greedy, greedy_power, lp_round

__all__ = [
    "BASELINES",
    "NIGHT_BASELINES",
    "conservative",
    "deadline_greedy",
    "easy",
    "edf",
    "fifo",
    "greedy",
    "greedy_power",
    "lp_round",
]
