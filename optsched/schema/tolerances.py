"""The tolerances every layer shares, defined once: the planners, the night engine and the verifiers agree on
what counts as the same instant, a met deadline and a budget that holds."""

# Hours: instants closer than this are the same instant (3.6 ms), for the night engine and its verifier alike.
TIME_TOL_HOURS = 1e-6
# A deadline is met when runtime <= deadline * (1 + DEADLINE_RTOL): HiGHS's feasibility tolerance.
DEADLINE_RTOL = 1e-6
# Watts: a draw this far above a budget still holds it (the solver's row tolerance, summed over a few rows).
POWER_TOL_W = 1e-6
# The fairness objectives' second solve maximises the weighted speedup among plans whose fairness value is at least
# (1 - FAIRNESS_TOLERANCE) x the max-min plan's (docs/guides/fairness.md): 1 % of fairness buys the throughput back.
FAIRNESS_TOLERANCE = 0.01
