"""The families write their rows as arrays (ModelData.option_arrays, Builder.add_matrix_rows); the term-list path
(what the Pyomo backend takes) and the array path must give the HiGHS model the same matrix, bounds and costs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

from optsched.model.builder import ModelBuilder
from optsched.model.constraints import populate_model
from optsched.model.data import ModelData
from optsched.schema.workload import Workload
from optsched.solve.backends import HighsBuilder
from optsched.testing.instances import generate, generate_racks
from tests.support.factories import tiny_workloads


class TermListBuilder(HighsBuilder):
    """The HiGHS builder fed through the interface's default term-list paths instead of its arrays."""

    add_matrix_rows = ModelBuilder.add_matrix_rows

    def set_objective(self, terms, constant, maximise, entries=()):
        super().set_objective(self.entry_terms(entries) + list(terms), constant, maximise)


def model_arrays(builder: HighsBuilder, workload: Workload) -> tuple:
    populate_model(builder, ModelData(workload))
    lp = builder.highs().getLp()
    matrix = lp.a_matrix_
    arrays = (matrix.start_, matrix.index_, matrix.value_, lp.row_lower_, lp.row_upper_, lp.col_cost_, lp.col_lower_,
              lp.col_upper_)
    return builder.row_keys, lp.offset_, lp.sense_, [np.array(a) for a in arrays]


def assert_same_model(workload: Workload) -> None:
    keys, offset, sense, arrays = model_arrays(HighsBuilder(), workload)
    keys_t, offset_t, sense_t, arrays_t = model_arrays(TermListBuilder(), workload)
    assert (keys, offset, sense) == (keys_t, offset_t, sense_t)
    for a, b in zip(arrays, arrays_t, strict=True):
        assert np.array_equal(a, b)


def as_workload(w) -> Workload:
    return w if isinstance(w, Workload) else Workload.load(w)


@given(tiny_workloads(max_jobs=6, max_groups=3, max_count=4))
def test_array_rows_equal_term_rows_on_random_workloads(w):
    workload = as_workload(w)
    assert_same_model(workload)
    assert_same_model(workload.model_copy(update={"objective": "min_power"}))


@pytest.mark.slow
def test_array_rows_equal_term_rows_on_generated_fleets_with_racks():
    for workload in (generate("M", 0), generate_racks("M", 1)):
        assert_same_model(workload)


@given(tiny_workloads())
def test_option_arrays_agree_with_the_per_option_coefficients(w):
    data = ModelData(as_workload(w))
    arrays = data.option_arrays
    hosts = {o.key for j in range(len(data.jobs)) if data.jobs[j].parallel_fraction < 1 for o in data.host_options(j)}
    for i, o in enumerate(data.options):
        assert (arrays.job[i], arrays.group[i], arrays.speed[i]) == (o.job, o.group, o.speed)
        assert arrays.draw[i] == o.cap_w - o.idle_w
        assert bool(arrays.host[i]) == (o.key in hosts)
        if o.key in hosts:
            assert arrays.deadline_coefficient[i] == data.deadline_coefficient(o)
