"""`optsched.pyomo_model`: a workload's MILP as a Pyomo model, for inspection (pprint, LP files, own experiments)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from optsched.model.constraints import ExtraFunctionality
from optsched.model.data import ModelData
from optsched.schema.workload import Workload
from optsched.solve.backends import build_model
from optsched.solve.planner import WorkloadSource
from optsched.solve.pyomo_backend import PyomoBuilder

if TYPE_CHECKING:
    import pyomo.environ


def pyomo_model(
    source: WorkloadSource, *, extra_functionality: ExtraFunctionality | None = None
) -> pyomo.environ.ConcreteModel:
    """The model the "pyomo" backend builds for `source` before its first solve (variables n, h, a, S, R, s_host
    and one constraint per family: optsched.solve.pyomo_backend). The planner adds tangent cuts while it solves,
    so this holds only the initial ones. Raises InvalidWorkload; never mutates the input."""
    data = ModelData(Workload.load(source))
    builder = build_model(data, backend="pyomo", extra_functionality=extra_functionality)
    if not isinstance(builder, PyomoBuilder):
        raise TypeError(f"the pyomo backend built a {type(builder).__name__}")
    return builder.model
