"""Baselines an optimiser must beat: placement rules (one instant) and night-queue rules (a timeline)."""

from optsched.baselines.placement import BASELINES, greedy, greedy_power, lp_round

__all__ = ["BASELINES", "greedy", "greedy_power", "lp_round"]

try:  # the night-queue baselines live beside them
    from optsched.baselines.night import edf, fifo  # noqa: F401

    __all__ += ["edf", "fifo"]
except ImportError:
    pass
