"""A study is validated as a whole: strict numbers, no unknown fields, one pool, and every problem with its path."""

from __future__ import annotations

import copy
import json

import pytest

from optsched.queueing import Study, load_study
from optsched.schema.errors import InvalidStudy, InvalidWorkload
from tests.queueing.queueing_factories import klass, study


def problems(doc) -> dict[str, str]:
    with pytest.raises(InvalidStudy) as info:
        load_study(doc)
    return {e.path: e.message for e in info.value.errors}


def valid() -> dict:
    return study([klass("hi", "high", 0.3, 1.0), klass("lo", "low", 0.3, 1.0)], servers=2, targets={"hi": 2.0})


def test_a_valid_study_loads_from_a_dict_a_json_string_and_a_file(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(valid()))
    studies = [load_study(valid()), load_study(json.dumps(valid())), load_study(path), load_study(str(path))]
    assert all(isinstance(s, Study) and s == studies[0] for s in studies)


def test_an_invalid_study_is_an_invalid_workload_for_every_handler_of_bad_input():
    with pytest.raises(InvalidWorkload, match="invalid study"):
        load_study({"classes": []})


def test_numbers_are_never_coerced_from_strings_or_booleans_devices_included():
    doc = valid()
    doc["classes"][0]["arrival_rate_per_hour"] = "0.3"
    doc["classes"][1]["work_hours"]["scv"] = True
    doc["classes"][1]["devices_per_job"] = 1.0
    doc["devices"][0]["count"] = "2"
    doc["devices"][0]["power_levels"][1]["cap_w"] = "60"
    doc["targets"]["hi"]["mean_response_hours"] = "2"
    found = problems(doc)
    assert set(found) == {
        "classes[0].arrival_rate_per_hour",
        "classes[1].work_hours.scv",
        "classes[1].devices_per_job",
        "devices[0].count",
        "devices[0].power_levels[1].cap_w",
        "targets.hi.mean_response_hours",
    }


def test_unknown_fields_and_values_out_of_range_are_named():
    doc = valid()
    doc["classes"][0]["deadline"] = 3
    doc["classes"][1]["parallel_fraction"] = 1.5
    doc["classes"][1]["priority"] = "urgent"
    doc["discipline"] = "lifo"
    doc["devices"][0]["colour"] = "red"
    found = problems(doc)
    assert set(found) == {
        "classes[0].deadline", "classes[1].parallel_fraction", "classes[1].priority", "discipline", "devices[0].colour",
    }


def test_cross_field_problems_are_all_reported_at_once():
    doc = valid()
    doc["devices"].append({**copy.deepcopy(doc["devices"][0]), "id": "other", "model": "A100-SXM"})
    doc["devices"].append({**copy.deepcopy(doc["devices"][0]), "id": "pool"})
    doc["classes"].append(klass("hi", "normal", 0.1, 1.0, d=2, cap_w=75.0))
    doc["classes"][1]["allowed_models"] = ["H100-SXM"]
    doc["targets"]["nobody"] = {"mean_response_hours": 1.0}
    found = problems(doc)
    assert set(found) == {
        "devices[1].model", "devices[2].id", "classes[2].name", "classes[2].devices_per_job", "classes[2].cap_w",
        "classes[1].allowed_models", "targets.nobody",
    }
    assert "a study pools servers of one device model" in found["devices[1].model"]
    assert "choose one of [100.0, 60.0] W" in found["classes[2].cap_w"]


def test_groups_of_one_model_must_be_identical():
    doc = valid()
    doc["devices"].append({**copy.deepcopy(doc["devices"][0]), "id": "b", "idle_w": 20.0})
    doc["devices"].append(
        {**copy.deepcopy(doc["devices"][0]), "id": "c", "power_levels": [{"cap_w": 100.0, "speed": 2.0}]}
    )
    assert set(problems(doc)) == {"devices[1].idle_w", "devices[2].power_levels"}


def test_servers_larger_than_every_group_are_refused():
    doc = study([klass("a", "high", 0.1, 1.0, d=4)], count=3)
    assert problems(doc) == {
        "classes[0].devices_per_job": "no device group has 4 devices, so there is no server of 4 devices"
    }


def test_catalog_models_fill_power_levels_and_idle_draw():
    doc = valid()
    doc["devices"] = [{"id": "a100", "model": "A100-SXM", "count": 4}]
    doc["classes"][0]["cap_w"] = 300.0
    doc["classes"][1]["cap_w"] = 200.0
    s = load_study(doc)
    assert s.levels == (400.0, 300.0, 267.0, 200.0) and s.devices[0].idle_w == 50.0 and s.servers == 4


def test_a_device_without_levels_of_an_unknown_model_is_named():
    doc = valid()
    del doc["devices"][0]["power_levels"]
    assert "devices[0].power_levels" in problems(doc)


@pytest.mark.parametrize(
    "text,message",
    [("{not json", "not valid JSON"), ('{"name": NaN}', "NaN is not a number JSON allows"), ("[]", "valid dictionary")],
)
def test_unreadable_documents_are_invalid(text, message):
    found = problems(text if text.startswith("{") else json.loads(text))
    assert any(message in m for m in found.values()), found


def test_a_missing_file_is_invalid(tmp_path):
    assert "cannot read" in problems(tmp_path / "missing.json")[""]


def test_two_levels_with_one_cap_are_ambiguous():
    doc = valid()
    doc["devices"][0]["power_levels"].append({"cap_w": 60.0, "speed": 0.5})
    assert set(problems(doc)) == {"devices[0].power_levels"}
