"""Hypothesis strategies that break valid workloads: one mutation at one JSON path, and what must come of it.

A `Mutant` is a workload document (as JSON text, since NaN and 10^5-deep nesting do not survive `json.dumps`
of a dict), the path that was changed, the kind of change, and whether every interface must reject it
(`must_reject`: wrong types, NaN/inf, negatives, unknown fields, duplicate ids, oversized lists, deep nesting)
or may accept it (extreme numbers, unicode ids: then the plan must verify).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from optsched.schema.workload import DeviceGroup, Job, Options, Power, PowerLevel, PowerWindow, Workload
from tests.support.factories import tiny_workloads

# Placeholder replaced in the JSON text by a value json.dumps cannot write (NaN, deep nesting).
RAW = "__raw_json_value__"
# Magnitudes far outside any real fleet, both ways (5e-324 is the smallest double, 1.8e308 the largest).
EXTREME = (
    1e9, 1e12, 1e15, 1e30, 1e100, 1e300, 1.7976931348623157e308, 2**53 + 1, 2**63, 10**30, 10**100,
    1e-6, 1e-12, 1e-100, 1e-300, 5e-324,
)
BAD_SCALARS: tuple[object, ...] = ("abc", "", "1e", [], {}, [1, 2], {"x": 1})
# Every field name of every workload model: an "unknown" field must be none of them.
FIELD_NAMES = frozenset(
    name
    for model in (Workload, DeviceGroup, Job, Power, PowerWindow, PowerLevel, Options)
    for name in model.model_fields
)


@dataclass(frozen=True)
class Mutant:
    kind: str
    path: str  # JSON path of the changed value, as optsched writes it (jobs[0].work_hours)
    text: str  # the mutated workload, JSON text (may hold NaN or deep nesting)
    must_reject: bool

    def document(self) -> Any:
        """The mutated workload as Python data (NaN and infinity included)."""
        return json.loads(self.text)


def json_path(parts: tuple[str | int, ...]) -> str:
    path = ""
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def leaves(doc: Any, parts: tuple = ()) -> list[tuple[tuple, Any]]:
    """Every (path, value) in the document, containers included (the root excluded)."""
    out = []
    if isinstance(doc, dict):
        for key, value in doc.items():
            out.append(((*parts, key), value))
            out.extend(leaves(value, (*parts, key)))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            out.append(((*parts, i), value))
            out.extend(leaves(value, (*parts, i)))
    return out


def replace(doc: Any, parts: tuple, value: Any) -> Any:
    out = copy.deepcopy(doc)
    target = out
    for part in parts[:-1]:
        target = target[part]
    target[parts[-1]] = value
    return out


def dumps_with_raw(doc: Any, raw: str | None = None) -> str:
    text = json.dumps(doc, ensure_ascii=False)
    return text if raw is None else text.replace(json.dumps(RAW), raw)


def _numbers(doc) -> list[tuple[tuple, Any]]:
    return [(p, v) for p, v in leaves(doc) if isinstance(v, (int, float)) and not isinstance(v, bool)]


def _typed_fields(doc) -> list[tuple[tuple, Any]]:
    """Every value present (the schema fixes the type of each, map values included)."""
    return [(p, v) for p, v in leaves(doc) if v is not None]


def _objects(doc) -> list[tuple]:
    """Paths of the model objects (closed sets of fields): the root, devices, jobs, levels, power, options."""
    out = [()]
    for p, v in leaves(doc):
        if isinstance(v, dict) and not (p and p[-1] in ("speed_on", "domains")):
            out.append(p)
    return out


def wrong_type(draw, doc) -> Mutant:
    parts, value = draw(st.sampled_from(_typed_fields(doc)))
    if isinstance(value, str):
        bad = draw(st.sampled_from([5, 1.5, True, [], {}, ["x"]]))
    elif isinstance(value, bool):
        bad = draw(st.sampled_from(["maybe", [], {}, 3]))
    elif isinstance(value, (int, float)):
        bad = draw(st.sampled_from(BAD_SCALARS))
    elif isinstance(value, list):
        bad = draw(st.sampled_from(["abc", 3, {"a": 1}]))
    else:  # an object
        bad = draw(st.sampled_from(["abc", 3, [1]]))
    return Mutant("wrong type", json_path(parts), dumps_with_raw(replace(doc, parts, bad)), True)


def non_finite(draw, doc) -> Mutant:
    parts, _ = draw(st.sampled_from(_numbers(doc)))
    raw = draw(st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400"]))
    return Mutant("non-finite", json_path(parts), dumps_with_raw(replace(doc, parts, RAW), raw), True)


def negative(draw, doc) -> Mutant:
    parts, value = draw(st.sampled_from(_numbers(doc)))
    bad = -abs(value) - draw(st.sampled_from([1e-9, 1, 1e6]))
    return Mutant("negative", json_path(parts), dumps_with_raw(replace(doc, parts, bad)), True)


def extreme(draw, doc) -> Mutant:
    parts, value = draw(st.sampled_from(_numbers(doc)))
    number = draw(st.sampled_from(EXTREME))
    if isinstance(value, int) and isinstance(number, float) and 1 <= number < 2**63:
        number = int(number)
    return Mutant("extreme number", json_path(parts), dumps_with_raw(replace(doc, parts, number)), False)


def long_list(draw, doc) -> Mutant:
    """A list of 10^5 or 10^6 items in place of a list (or any value)."""
    n = draw(st.sampled_from([100_001, 1_000_000]))
    item = draw(st.sampled_from([1, "x", None, {"id": "j"}]))
    target = draw(st.sampled_from(["jobs", "devices", "allowed_models", "power_levels", "after", "name"]))
    parts: tuple
    if target in ("jobs", "devices", "name"):
        parts = (target,)
    elif target == "power_levels":
        parts = ("devices", 0, "power_levels")
    else:
        parts = ("jobs", 0, target) if doc["jobs"] else ("jobs",)
    raw = "[" + ",".join([json.dumps(item)] * n) + "]"
    return Mutant("long list", json_path(parts), dumps_with_raw(replace(doc, parts, RAW), raw), True)


def deep(draw, doc) -> Mutant:
    parts, _ = draw(st.sampled_from(leaves(doc)))
    depth = draw(st.sampled_from([40, 1_000, 100_000]))
    opener, closer = draw(st.sampled_from([("[", "]"), ('{"a":', "}")]))
    raw = opener * depth + "1" + closer * depth
    return Mutant("deep nesting", json_path(parts), dumps_with_raw(replace(doc, parts, RAW), raw), True)


def unknown_field(draw, doc) -> Mutant:
    parts = draw(st.sampled_from(_objects(doc)))
    name = draw(st.text(min_size=1, max_size=12).filter(lambda s: s not in FIELD_NAMES))
    value = draw(st.sampled_from([1, "x", None, [], {"nested": True}]))
    out = copy.deepcopy(doc)
    _target(out, parts)[name] = value
    return Mutant("unknown field", json_path((*parts, name)), dumps_with_raw(out), True)


def unicode_id(draw, doc) -> Mutant:
    kind = draw(st.sampled_from([k for k in ("jobs", "devices") if doc[k]]))
    i = draw(st.integers(0, len(doc[kind]) - 1))
    others = {item["id"] for k, item in enumerate(doc[kind]) if k != i}
    new = draw(st.text(min_size=1, max_size=200).filter(lambda s: s not in others))
    out = replace(doc, (kind, i, "id"), new)
    return Mutant("unicode id", json_path((kind, i, "id")), dumps_with_raw(out), False)


def duplicate_id(draw, doc) -> Mutant:
    kinds = [k for k in ("jobs", "devices") if len(doc[k]) >= 2]
    if not kinds:
        out = copy.deepcopy(doc)
        out["devices"].append(copy.deepcopy(out["devices"][0]))
        return Mutant("duplicate id", f"devices[{len(out['devices']) - 1}].id", dumps_with_raw(out), True)
    kind = draw(st.sampled_from(kinds))
    i, k = sorted(draw(st.lists(st.integers(0, len(doc[kind]) - 1), min_size=2, max_size=2, unique=True)))
    out = replace(doc, (kind, k, "id"), doc[kind][i]["id"])
    return Mutant("duplicate id", json_path((kind, k, "id")), dumps_with_raw(out), True)


def missing_field(draw, doc) -> Mutant:
    required = [("devices",)] + [
        ("devices", i, f) for i in range(len(doc["devices"])) for f in ("id", "model", "count")
    ]
    required += [("jobs", i, f) for i in range(len(doc["jobs"])) for f in ("id", "work_hours", "parallel_fraction")]
    parts = draw(st.sampled_from(required))
    out = copy.deepcopy(doc)
    del _target(out, parts[:-1])[parts[-1]]
    return Mutant("missing field", json_path(parts), dumps_with_raw(out), True)


def _target(doc: Any, parts: tuple) -> Any:
    for part in parts:
        doc = doc[part]
    return doc


MUTATIONS = {
    "wrong type": wrong_type,
    "non-finite": non_finite,
    "negative": negative,
    "extreme number": extreme,
    "long list": long_list,
    "deep nesting": deep,
    "unknown field": unknown_field,
    "unicode id": unicode_id,
    "duplicate id": duplicate_id,
    "missing field": missing_field,
}


@st.composite
def mutants(draw, kinds: tuple[str, ...] = tuple(MUTATIONS)) -> Mutant:
    """A tiny valid workload (tests.support.factories) with one mutation of one of `kinds`."""
    doc = draw(tiny_workloads(max_jobs=3, max_groups=2, max_count=3))
    doc["options"] = {"time_limit_s": 5, "mip_gap": 1e-4}
    kind = draw(st.sampled_from(kinds))
    return MUTATIONS[kind](draw, doc)


def reported(path: str, error_paths: list[str]) -> bool:
    """Whether the mutated `path` (or a value inside or around it) is among the error paths."""
    for e in error_paths:
        if e == path or e.startswith(path + ".") or e.startswith(path + "[") or (e and path.startswith(e + ".")):
            return True
        if e and path.startswith(e + "["):
            return True
    return False
