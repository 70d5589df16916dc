"""Issue 25: ids that look alike are one id (NFC) or refused (invisible and blank characters), in every schema
that declares ids: the workload, the night queue, the change document and the queueing study. Each refusal
names its field."""

from __future__ import annotations

import pytest

from optsched.queueing.schema import load_study
from optsched.replan import Change
from optsched.schema.errors import InvalidWorkload
from optsched.schema.night import NightQueue
from optsched.schema.workload import Workload, normal_id
from tests.queueing.queueing_factories import klass, study
from tests.support.factories import device, job, workload

TAG_SPACE = "train\U000e0020"  # "train" and an invisible tag character
COMPOSED, DECOMPOSED = "\u00e9", "e\u0301"  # "é" both ways


def paths(exc: InvalidWorkload) -> list[str]:
    return [e.path for e in exc.errors]


def base(*jobs: dict, **extra) -> dict:
    return workload([device("g1", "m1", 4, [(100.0, 1.0)], domain="r1")], list(jobs), **extra)


@pytest.mark.parametrize(
    "bad",
    [TAG_SPACE, " ", "\u3000", "train ", " train", "a\ufe0fb", "a\u3164b", "a\U000f0000b", "a\u0378b", "a\u2029b",
     "a\u00a0b", "a\u3000b", "a\u2009b"],
    ids=["tag", "blank", "ideographic-blank", "trailing", "leading", "variation", "filler", "private", "unassigned",
         "paragraph", "no-break-space", "ideographic-space", "thin-space"],
)
def test_invisible_and_blank_ids_are_refused_at_their_path(bad):
    with pytest.raises(ValueError):
        normal_id(bad)
    with pytest.raises(InvalidWorkload) as info:
        Workload.load(base(job("train"), job(bad)))
    assert paths(info.value) == ["jobs[1].id"]
    with pytest.raises(InvalidWorkload) as info:
        Workload.load(base(job("train"), power={"domains": {bad: 10.0}}))
    assert [p.split(".[key]")[0] for p in paths(info.value)] == [f"power.domains.{bad}"]


def test_ids_are_stored_in_nfc_and_duplicates_after_normalisation_are_errors():
    assert normal_id(DECOMPOSED) == COMPOSED
    assert Workload.load(base(job(DECOMPOSED))).jobs[0].id == COMPOSED
    with pytest.raises(InvalidWorkload) as info:
        Workload.load(base(job(COMPOSED), job(DECOMPOSED)))
    assert paths(info.value) == ["jobs[1].id"]
    two_groups = base(job("a"))
    two_groups["devices"].append({**two_groups["devices"][0], "id": "g" + "\u0301"})
    two_groups["devices"][0]["id"] = "\u01f5"  # g with acute, precomposed
    with pytest.raises(InvalidWorkload) as info:
        Workload.load(two_groups)
    assert paths(info.value) == ["devices[1].id"]


def test_mapping_keys_that_are_one_id_are_an_error_not_one_silently_dropped():
    with pytest.raises(InvalidWorkload) as info:
        Workload.load(base(job("a"), power={"domains": {COMPOSED: 1.0, DECOMPOSED: 2.0}}))
    assert paths(info.value) == ["power.domains"]
    assert "same id once normalised" in str(info.value)
    with pytest.raises(InvalidWorkload) as info:
        Workload.load(base(job("a", speed_on={COMPOSED: 1.0, DECOMPOSED: 2.0})))
    assert paths(info.value) == ["jobs[0].speed_on"]


def test_the_night_queue_normalises_its_ids_and_references():
    queue = base(job(COMPOSED), job("b", after=[DECOMPOSED]))
    assert NightQueue.load(queue).jobs[1].after == (COMPOSED,)
    with pytest.raises(InvalidWorkload) as info:
        NightQueue.load(base(job("train"), job(TAG_SPACE)))
    assert paths(info.value) == ["jobs[1].id"]


def test_the_change_document_normalises_and_refuses_alike():
    with pytest.raises(InvalidWorkload) as info:
        Change.load({"remove_jobs": [COMPOSED, DECOMPOSED], "pin": [" "], "add_jobs": [job(TAG_SPACE)]})
    assert sorted(paths(info.value)) == ["add_jobs[0].id", "pin[0]"]
    with pytest.raises(InvalidWorkload) as info:
        Change.load({"remove_jobs": [COMPOSED, DECOMPOSED]})
    assert paths(info.value) == ["remove_jobs[1]"]
    with pytest.raises(InvalidWorkload) as info:
        Change.load({"domains": {COMPOSED: 1.0, DECOMPOSED: 2.0}})
    assert paths(info.value) == ["domains"]


def test_the_study_normalises_class_names_and_target_keys():
    with pytest.raises(InvalidWorkload) as info:
        load_study(study([klass(COMPOSED, "high", 0.1, 1.0), klass(DECOMPOSED, "low", 0.1, 1.0)]))
    assert paths(info.value) == ["classes[1].name"]
    with pytest.raises(InvalidWorkload) as info:
        load_study(study([klass(TAG_SPACE, "high", 0.1, 1.0)]))
    assert paths(info.value) == ["classes[0].name"]
    loaded = load_study(study([klass(DECOMPOSED, "high", 0.1, 1.0)], targets={COMPOSED: 5.0}))
    assert loaded.classes[0].name == COMPOSED and set(loaded.targets) == {COMPOSED}
