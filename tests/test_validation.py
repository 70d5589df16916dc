"""Invalid workloads are rejected with every problem and its JSON path at once."""

from __future__ import annotations

import json
import pickle
from concurrent.futures import ProcessPoolExecutor

import pytest
from pydantic import ValidationError

from optsched import InvalidWorkload, Workload
from optsched.queueing.schema import load_study
from optsched.replan.schema import InvalidChange
from optsched.schema.errors import FieldError, InvalidPlan, InvalidStudy
from tests.support.factories import device, job, workload


def problems(data) -> dict[str, str]:
    with pytest.raises(InvalidWorkload) as info:
        Workload.load(data)
    return {e.path: e.message for e in info.value.errors}


def test_every_problem_is_listed_with_its_path():
    data = workload(
        [device("g", "m", 0, [(100, 1.0)]), device("g", "m", 1, [(-5, 1.0)])],
        [job("a", p=1.5), job("b", work=0), job("c", weight=-1)],
    )
    found = problems(data)
    assert "devices[0].count" in found
    assert "devices[1].power_levels[0].cap_w" in found
    assert "jobs[0].parallel_fraction" in found
    assert "jobs[1].work_hours" in found
    assert "jobs[2].weight" in found


def test_cross_field_problems_are_all_listed():
    data = workload(
        [
            device("g", "m", 1, [(100, 1.0)]),
            device("g", "m", 1, [(100, 1.0)]),
            {"id": "x", "model": "unknown-gpu", "count": 1},
        ],
        [job("a", min_devices=3, max_devices=2), job("a")],
    )
    found = problems(data)
    assert "duplicate id 'g'" in found["devices[1].id"]
    assert "duplicate id 'a'" in found["jobs[1].id"]
    assert "not in the catalog" in found["devices[2].power_levels"]
    assert "min_devices 3 > max_devices 2" in found["jobs[0].min_devices"]


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_nan_and_infinity_are_rejected(bad):
    found = problems(workload([device("g", "m", 1, [(100, 1.0)])], [job("a", work=bad)]))
    assert "jobs[0].work_hours" in found


def test_nan_in_json_text_is_rejected():
    text = json.dumps(workload([device("g", "m", 1, [(100, 1.0)])], [job("a")])).replace(
        '"work_hours": 10.0', '"work_hours": NaN'
    )
    found = problems(text)
    assert "" in found and "NaN" in found[""]


def test_unknown_fields_are_rejected():
    data = workload([device("g", "m", 1, [(100, 1.0)], colour="red")], [job("a", prio="high")])
    found = problems(data)
    assert "devices[0].colour" in found and "jobs[0].prio" in found


def test_unknown_objective_names_the_choices():
    found = problems(workload([device("g", "m", 1, [(100, 1.0)])], [], objective="fastest"))
    assert "min_power" in found["objective"] and "weighted_speedup" in found["objective"]


def test_catalog_fills_left_out_fields_and_they_are_echoed():
    import optsched

    w = Workload.load(workload([{"id": "h", "model": "H100-SXM", "count": 2}], [job("a")]))
    assert w.devices[0].power_levels and w.devices[0].memory_gb == 80
    result = optsched.plan(w)
    assert result.devices[0].power_levels == tuple((lv.cap_w, lv.speed) for lv in w.devices[0].power_levels)
    assert result.devices[0].memory_gb == 80


def test_warnings_for_suspicious_but_valid_input():
    import optsched

    data = workload(
        [device("g", "m", 1, [(100, 1.0)], domain="r1")],
        [job("a", allowed_models=["m", "ghost"], speed_on={"phantom": 2.0})],
        power={"domains": {"r9": 100}},
    )
    warnings = optsched.plan(data).warnings
    assert any("'ghost'" in w for w in warnings)
    assert any("'phantom'" in w for w in warnings)
    assert any("'r9'" in w for w in warnings)


def test_workload_objects_are_frozen():
    w = Workload.load(workload([device("g", "m", 1, [(100, 1.0)])], [job("a")]))
    with pytest.raises(ValidationError):
        w.jobs[0].work_hours = 3  # type: ignore[misc]


def _load_study_elsewhere(document: dict) -> None:
    load_study(document)


@pytest.mark.parametrize("error", [InvalidWorkload, InvalidStudy, InvalidChange, InvalidPlan])
def test_field_errors_survive_pickling(error):
    """Solver and worker processes hand errors back pickled: the fields and the message must come back whole."""
    raised = error([FieldError("jobs[0].work_hours", "must be > 0"), FieldError("", "empty")])
    back = pickle.loads(pickle.dumps(raised))
    assert type(back) is error
    assert back.errors == raised.errors
    assert str(back) == str(raised)


def test_an_invalid_study_from_another_process_names_its_fields():
    with ProcessPoolExecutor(max_workers=1) as pool:
        with pytest.raises(InvalidStudy) as caught:
            pool.submit(_load_study_elsewhere, {"classes": "none"}).result(timeout=60)
    assert caught.value.errors and all(isinstance(e, FieldError) for e in caught.value.errors)
    assert "classes" in {e.path.split("[")[0].split(".")[0] for e in caught.value.errors}
    assert str(caught.value).startswith(f"invalid study ({len(caught.value.errors)} problem(s))"), str(caught.value)
