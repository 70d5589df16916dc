"""Column generation (Dantzig-Wolfe) for weighted_speedup at scale: a master over whole job allocations.

Only the device capacities (G rows) and the budgets (B rows) couple the jobs; everything else (admission,
min/max devices, the serial host, the deadline, the Amdahl speedup) belongs to one job. A *column* is one job's
complete integer allocation, valued at its exact weighted speedup w_j S_j; the master picks at most one column
per job (exactly one for a must-run job):

    max sum_c v_c x_c  s.t.  sum_{c of j} x_c <= 1 (= 1 if j must run),
                             sum_c devices_gc x_c <= count_g (devices),
                             sum_c extra_bc x_c <= budget_b - idle draw in b (W),   x_c in {0, 1}.

Its LP has J + G + B rows whatever the number of options, so HiGHS solves it in a blink at 20,000 jobs. Pricing
uses its duals (mu_g per device, lambda_b per watt, sigma_j per job): for every job, every host level k and a
few extra levels l (k's own, and those cheapest per unit of speed at these prices), every count m of extra
devices is valued exactly, and the best allocation with a positive reduced profit
w S - pi_k - m pi_l - sigma_j joins the master. The duals also give a proven bound at no extra cost: the
Lagrangian D(mu, lambda) of optsched.solve.bound (a closed-form upper bound per job over *every* allocation),
valid for any prices. When pricing finds nothing, the columns' integer master (price-and-branch) is solved by
HiGHS, warm-started from the best plan; with a few dozen coupling rows against thousands of jobs, the LP
leaves at most G + B jobs fractional, so that MILP is close to its LP.

The package follows those seams: master.py (the restricted master, its LP duals and integer solve), pricing.py
(columns with a positive reduced profit), bounds.py (the Lagrangian and per-job bounds), generation.py (the loop,
`solve_by_columns`).
"""

from optsched.solve.columns.bounds import JobBounds
from optsched.solve.columns.generation import ColumnStats, Controls, sample_prices, solve_by_columns
from optsched.solve.columns.master import Column, ColumnMaster, Consider
from optsched.solve.columns.pricing import Pricing

__all__ = [
    "Column", "ColumnMaster", "ColumnStats", "Consider", "Controls", "JobBounds", "Pricing", "sample_prices",
    "solve_by_columns",
]
