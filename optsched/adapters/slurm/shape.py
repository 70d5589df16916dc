"""What a Slurm job can be given: the GPUs of one node. The planners may spread a job over several device groups
(nodes); this rule, added to the MILP through `extra_functionality`, keeps each job on one."""

from __future__ import annotations

from collections.abc import Hashable

from optsched.model.builder import ModelBuilder, Row
from optsched.model.data import ModelData

FAMILY = "slurm_one_node"


def one_node_per_job(b: ModelBuilder, data: ModelData) -> None:
    """sum_l n[j,g,l] <= min(U_j, c_g) y[j,g] and sum_g y[j,g] <= 1, y binary: each job's devices on one group."""
    keys: list[Hashable] = []
    rows: list[Row] = []
    for j, options in enumerate(data.options_of_job):
        groups: dict[int, list] = {}
        for o in options:
            groups.setdefault(o.group, []).append(o)
        if len(groups) < 2:
            continue
        most = data.jobs[j].max_devices
        for g, opts in groups.items():
            bound = float(min(most or data.groups[g].count, data.groups[g].count))
            keys.append((j, g))
            rows.append(((j, g), [*(("n", o.key, 1.0) for o in opts), ("y_slurm", (j, g), -bound)], float("-inf"), 0.0))
        rows.append((("one", j), [("y_slurm", (j, g), 1.0) for g in groups], float("-inf"), 1.0))
    if not rows:
        return
    b.add_variables("y_slurm", keys, [0.0] * len(keys), [1.0] * len(keys), integer=True)
    b.add_rows(FAMILY, rows)
