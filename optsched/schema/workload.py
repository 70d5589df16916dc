"""The workload: device groups, jobs and power budgets (typed, frozen, validated as a whole)."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Self, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from optsched.schema.catalog import catalog_entry
from optsched.schema.errors import FieldError, InvalidWorkload
from optsched.schema.limits import check_document

# The objectives a workload may name; optsched.model.objectives registers one implementation for each (a test
# checks the two agree), so the schema does not depend on the model.
OBJECTIVE_NAMES = ("weighted_speedup", "min_power", "max_min_speedup", "team_max_min")
# The objectives that normalise each job's speedup by its speedup alone on the fleet (docs/guides/fairness.md).
FAIR_OBJECTIVES = frozenset({"max_min_speedup", "team_max_min"})


class Priority(StrEnum):
    critical = "critical"
    high = "high"
    normal = "normal"
    low = "low"


PRIORITY_WEIGHT: Mapping[Priority, float] = {
    Priority.critical: 8.0,
    Priority.high: 4.0,
    Priority.normal: 2.0,
    Priority.low: 1.0,
}
HARD_PRIORITIES = frozenset({Priority.critical, Priority.high})
_V = TypeVar("_V")

# Characters an id or a name may not hold: C0 and C1 controls, and the invisible format characters (zero-width
# marks, bidirectional embeddings, overrides and isolates, the BOM) that make a text read otherwise than it is
# stored, in an HTML page or a log line. The same class is the `pattern` the schema publishes (ECMA, Python and
# Rust regex read it alike), and `printable` checks it with a full match, as a JSON Schema validator does.
UNPRINTABLE = (
    "\\x00-\\x1f\\x7f-\\x9f\\u00ad\\u061c\\u180e\\u200b-\\u200f\\u2028-\\u202e\\u2060-\\u206f\\ufeff\\ufff9-\\ufffb"
)
ID_PATTERN = f"^[^{UNPRINTABLE}]+$"
NAME_PATTERN = f"^[^{UNPRINTABLE}]*$"
_PRINTABLE = re.compile(f"[^{UNPRINTABLE}]*")


def printable(text: str) -> str:
    """`text` unchanged, or ValueError naming the first control or bidirectional-format character in it."""
    if _PRINTABLE.fullmatch(text) is None:
        bad = next(c for c in text if _PRINTABLE.fullmatch(c) is None)
        raise ValueError(f"must hold printable characters only; U+{ord(bad):04X} is a control or format character")
    return text


# Code points that render as nothing though Unicode assigns them (the Default_Ignorable_Code_Point ranges that are
# not format characters already): variation selectors, fillers, tag characters. "train" followed by U+E0020 would
# otherwise look like "train" and be another id.
_IGNORABLE = re.compile(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f\uffa0\ufff0-\ufff8"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)
# Unicode general categories that never belong in an id: controls, format characters, surrogates, private use,
# unassigned, and the line and paragraph separators.
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def normal_id(text: str) -> str:
    """`text` in Unicode normal form C, or ValueError if it is blank, starts or ends with white space, or holds an
    invisible character (a control, format, private-use, unassigned or default-ignorable code point) or a space
    other than U+0020 (no-break, ideographic, ...).

    Every id of every schema goes through this one function, so two ids that look alike are one id ("e" + U+0301
    is "é") or one of them is refused ("train" + U+E0020); the duplicate checks then compare the normal forms."""
    normal = unicodedata.normalize("NFC", printable(text))
    if not normal.strip():
        raise ValueError("must not be blank")
    if normal != normal.strip():
        raise ValueError("must not start or end with white space")
    for c in normal:
        if unicodedata.category(c) in _INVISIBLE_CATEGORIES or _IGNORABLE.match(c):
            raise ValueError(f"must hold visible characters only; U+{ord(c):04X} is invisible or unassigned")
        if c != " " and unicodedata.category(c) == "Zs":
            # "a b" with a no-break or an ideographic space looks like "a b" and would be another id.
            raise ValueError(f"must use the plain space U+0020 between words; U+{ord(c):04X} is another space")
    return normal


def distinct_keys(value: Any) -> Any:
    """A mapping whose keys are ids, unchanged, or ValueError naming two keys that are one id once normalised
    (validation would otherwise keep one of them silently)."""
    if not isinstance(value, Mapping):
        return value
    seen: dict[str, str] = {}
    for key in value:
        if not isinstance(key, str):
            continue  # the key's own validation names it
        try:
            normal = normal_id(key)
        except ValueError:
            continue
        if normal in seen:
            raise ValueError(f"keys {ascii(seen[normal])} and {ascii(key)} are the same id once normalised (NFC)")
        seen[normal] = key
    return value


# Strict types: JSON's own types only (no "0.95" for a number, no true for a count, no 1.0 for an integer).
Id = Annotated[
    str, Field(min_length=1, max_length=200, json_schema_extra={"pattern": ID_PATTERN}), AfterValidator(normal_id)
]
# A mapping keyed by ids: two keys that normalise to one id are an error, not one silently dropped.
IdMap = Annotated[dict[Id, _V], BeforeValidator(distinct_keys)]
Name = Annotated[str, Field(max_length=200, json_schema_extra={"pattern": NAME_PATTERN}), AfterValidator(printable)]
StrictInt = Annotated[int, Field(strict=True)]
StrictFloat = Annotated[float, Field(strict=True)]
StrictBool = Annotated[bool, Field(strict=True)]
PositiveFloat = Annotated[float, Field(gt=0, strict=True)]
NonNegativeFloat = Annotated[float, Field(ge=0, strict=True)]
# Quantities that enter the model's arithmetic stay within these bounds, far beyond any real fleet, so that
# runtimes, speedups and watts stay finite: a speed of 5e-324 makes every speedup 0, work of 1e308 every
# runtime infinite (found by tests/reliability/test_bad_input.py).
Speed = Annotated[float, Field(ge=1e-6, le=1e6, strict=True)]
Watts = Annotated[float, Field(gt=0, le=1e6, strict=True)]
IdleWatts = Annotated[float, Field(ge=0, le=1e6, strict=True)]
Hours = Annotated[float, Field(gt=0, le=1e9, strict=True)]
Weight = Annotated[float, Field(ge=1e-6, le=1e6, strict=True)]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class PowerLevel(Frozen):
    cap_w: Watts = Field(description="Power cap of one device at this level, in watts.")
    speed: Speed = Field(description="Speed relative to the reference device (1.0).")


class DeviceGroup(Frozen):
    id: Id
    model: Id = Field(description="Device model, e.g. H100-SXM; catalog models fill the fields left out.")
    count: StrictInt = Field(ge=1, le=1_000_000, description="Number of identical devices in the group.")
    memory_gb: PositiveFloat | None = None
    domain: Id | None = Field(default=None, description="Power domain (rack, PDU) the group belongs to.")
    idle_w: IdleWatts = Field(default=0.0, description="Draw of each device no job uses, in watts.")
    power_levels: tuple[PowerLevel, ...] = Field(default=(), max_length=64)

    @model_validator(mode="before")
    @classmethod
    def fill_from_catalog(cls, data: Any) -> Any:
        return filled_from_catalog(data)


def filled_from_catalog(data: Any) -> Any:
    """A device group document with the fields it leaves out taken from the shipped catalog when its model is
    known (anything else unchanged)."""
    if not isinstance(data, dict) or not isinstance(data.get("model"), str):
        return data
    entry = catalog_entry(data["model"])
    if entry is None:
        return data
    filled = dict(data)
    for key in ("power_levels", "memory_gb", "idle_w"):
        if filled.get(key) is None and key in entry:
            filled[key] = entry[key]
    return filled


class Job(Frozen):
    id: Id
    work_hours: Hours = Field(description="Hours the job needs on one reference device.")
    parallel_fraction: StrictFloat = Field(ge=0, le=1, description="Amdahl parallel fraction p.")
    priority: Priority = Priority.normal
    weight: Weight = 1.0
    deadline_hours: Hours | None = None
    min_devices: StrictInt = Field(default=1, ge=1, le=1_000_000)
    max_devices: StrictInt | None = Field(default=None, ge=1, le=1_000_000)
    memory_gb: NonNegativeFloat | None = Field(default=None, description="Memory needed on each device.")
    allowed_models: tuple[Id, ...] | None = None
    speed_on: IdMap[Speed] = Field(
        default_factory=dict, description="Model -> multiplier of that model's speed for this job."
    )
    team: Id | None = Field(
        default=None,
        description="Team the job belongs to (team_max_min shares the fleet between teams; null: a team of its own, "
        "named after the job).",
    )

    @property
    def is_hard(self) -> bool:
        return self.priority in HARD_PRIORITIES

    @property
    def team_name(self) -> str:
        """The job's team, or its own id when it names none."""
        return self.id if self.team is None else self.team

    @property
    def objective_weight(self) -> float:
        return PRIORITY_WEIGHT[self.priority] * self.weight


class PowerWindow(Frozen):
    """Hours [from_hours, to_hours) after the night starts in which budget_w replaces the global budget (a night
    queue's `power.windows`, optsched.schema.night; the core workload has no windows)."""

    from_hours: NonNegativeFloat
    to_hours: PositiveFloat
    budget_w: NonNegativeFloat = Field(description="Cap on the whole fleet inside the window, in watts.")

    @model_validator(mode="after")
    def ordered(self) -> PowerWindow:
        if self.from_hours >= self.to_hours:
            raise ValueError(f"from_hours {self.from_hours:g} must be < to_hours {self.to_hours:g}")
        return self


class Power(Frozen):
    budget_w: NonNegativeFloat | None = Field(default=None, description="Cap on the whole fleet, in watts.")
    domains: IdMap[NonNegativeFloat] = Field(default_factory=dict, description="Cap per power domain, in watts.")

    def budget_at(self, hours: float) -> float | None:
        """The global budget in force at `hours` (W): budget_w (a night queue's windows replace it inside them)."""
        return self.budget_w


class Options(Frozen):
    time_limit_s: StrictFloat = Field(default=30.0, gt=0, le=86_400)
    mip_gap: StrictFloat = Field(
        default=0.01,
        ge=0,
        le=1,
        description="Relative gap at which a plan counts as optimal (bench/results/planner.md).",
    )
    move_cost_hours: StrictFloat = Field(
        default=0.25,
        ge=0,
        le=1_000,
        description="Hours of its run a running job loses when a re-plan moves it (optsched.replan).",
    )


class Workload(Frozen):
    name: Name = "workload"
    devices: tuple[DeviceGroup, ...] = Field(min_length=1)
    jobs: tuple[Job, ...] = ()
    power: Power = Power()
    objective: str = Field(
        default="weighted_speedup",
        json_schema_extra={"enum": list(OBJECTIVE_NAMES)},
        description="What the plan optimises: one of optsched.OBJECTIVES (docs/concepts.md, docs/guides/fairness.md).",
    )
    teams: IdMap[Weight] = Field(
        default_factory=dict,
        description="Team -> share of the fleet under team_max_min (relative; shares are divided by their sum). "
        "Empty: every team present gets an equal share; when set, it names every job's team.",
    )
    options: Options = Options()

    def team_shares(self) -> dict[str, float]:
        """Each team of the jobs -> its share (sum 1): `teams` divided by their sum over the teams with jobs,
        else equal shares (teams in the order their first job appears)."""
        present = list(dict.fromkeys(job.team_name for job in self.jobs))
        raw = {t: (self.teams.get(t, 0.0) if self.teams else 1.0) for t in present}
        total = sum(raw.values())
        return {t: v / total for t, v in raw.items()} if total > 0 else {}

    @field_validator("objective")
    @classmethod
    def known_objective(cls, name: str) -> str:
        if name not in OBJECTIVE_NAMES:
            raise ValueError(f"unknown objective {name!r}; choose one of {sorted(OBJECTIVE_NAMES)}")
        return name

    @model_validator(mode="after")
    def consistent(self) -> Workload:
        problems = _semantic_problems(self)
        if problems:
            raise _SemanticProblems(problems)
        return self

    @classmethod
    def load(cls, source: Workload | Mapping[str, Any] | str | Path) -> Self:
        """A workload from an object, a dict, a JSON file path or a JSON string; InvalidWorkload lists every problem.

        An object of another workload class (a night queue given to the core, a workload given to the night
        planner) is validated again as this class, from the fields it sets."""
        if isinstance(source, cls) and type(source) is cls:
            return source
        if isinstance(source, Workload):
            source = source.model_dump(mode="json", exclude_unset=True)
        if isinstance(source, (str, Path)):
            source = _read_json(source)
        check_document(source)
        try:
            return cls.model_validate(source)
        except ValidationError as exc:
            raise InvalidWorkload(field_errors(exc)) from None


# Problems listed at most per invalid document (validation reports them all; listing a million helps no one).
MAX_LISTED_ERRORS = 100


class _SemanticProblems(ValueError):
    """Cross-field problems, carried through pydantic so that each keeps its own path."""

    def __init__(self, problems: list[FieldError]):
        super().__init__("; ".join(f"{p.path}: {p.message}" for p in problems))
        self.problems = problems


def _semantic_problems(w: Workload) -> list[FieldError]:
    problems: list[FieldError] = []
    ids: tuple[tuple[str, list[str]], ...] = (
        ("devices", [d.id for d in w.devices]),
        ("jobs", [j.id for j in w.jobs]),
    )
    for kind, item_ids in ids:
        seen: dict[str, int] = {}
        for i, item_id in enumerate(item_ids):
            if item_id in seen:
                problems.append(
                    FieldError(f"{kind}[{i}].id", f"duplicate id {item_id!r} (also {kind}[{seen[item_id]}])")
                )
            seen.setdefault(item_id, i)
    for i, d in enumerate(w.devices):
        if not d.power_levels:
            problems.append(
                FieldError(
                    f"devices[{i}].power_levels",
                    f"device {d.id!r} has no power level and model {d.model!r} is not in the catalog",
                )
            )
    for i, j in enumerate(w.jobs):
        if j.max_devices is not None and j.min_devices > j.max_devices:
            problems.append(
                FieldError(f"jobs[{i}].min_devices", f"min_devices {j.min_devices} > max_devices {j.max_devices}")
            )
        if w.teams and j.team_name not in w.teams:
            what = f"team {j.team!r} is" if j.team is not None else "no team is"
            problems.append(
                FieldError(f"jobs[{i}].team", f"{what} given but teams lists {sorted(w.teams)}: name one of them")
            )
    return problems


def field_errors(exc: ValidationError) -> list[FieldError]:
    """Flatten pydantic's errors into (JSON path, message) pairs, expanding our cross-field problems; past
    MAX_LISTED_ERRORS, one last entry counts the rest (a client fixes a hundred before it needs the next)."""
    out: list[FieldError] = []
    total = 0
    for err in exc.errors(include_url=False, include_input=False):
        cause = (err.get("ctx") or {}).get("error")
        found = cause.problems if isinstance(cause, _SemanticProblems) else None
        total += len(found) if found is not None else 1
        if len(out) >= MAX_LISTED_ERRORS:
            continue
        prefix = _json_path(err["loc"])
        if found is not None:
            out.extend(FieldError(_join(prefix, p.path), p.message) for p in found)
        elif err["type"] == "extra_forbidden" and _night_only(err["loc"]):
            out.append(FieldError(prefix, NIGHT_ONLY_MESSAGE.format(field=err["loc"][-1])))
        else:
            out.append(FieldError(prefix, err["msg"]))
    if total > MAX_LISTED_ERRORS:
        out = out[:MAX_LISTED_ERRORS]
        out.append(FieldError("", f"and {total - MAX_LISTED_ERRORS:,} more problems not listed; fix these first"))
    return out


# Fields only a night queue (optsched.schema.night.NightQueue) has, by where they sit in the document.
NIGHT_ONLY_JOB_FIELDS = frozenset({"release_hours", "after", "checkpoint_hours", "restart_hours", "elastic"})
NIGHT_ONLY_TOP_FIELDS = frozenset({"failures", "defaults"})
NIGHT_ONLY_MESSAGE = (
    "{field!r} is a night-queue field: the core planner takes no timeline; plan this queue with plan_night "
    "(optsched night, POST /v1/night-plans), or remove the field"
)


def _night_only(loc: tuple[Any, ...]) -> bool:
    """Whether an unknown field's location is one a night queue allows (jobs[i].after, power.windows, failures...)."""
    if len(loc) == 1:
        return loc[0] in NIGHT_ONLY_TOP_FIELDS
    if len(loc) == 2:
        return loc == ("power", "windows")
    return len(loc) == 3 and loc[0] == "jobs" and isinstance(loc[1], int) and loc[2] in NIGHT_ONLY_JOB_FIELDS


def _json_path(loc: tuple[Any, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def _join(prefix: str, path: str) -> str:
    return f"{prefix}.{path}" if prefix else path


def _read_json(source: str | Path) -> Any:
    text = str(source)
    if isinstance(source, str) and text.lstrip().startswith("{"):
        raw = text
    else:
        try:
            raw = Path(source).read_text(encoding="utf-8")
        except OSError as exc:
            raise InvalidWorkload([FieldError("", f"cannot read {text}: {exc.strerror}")]) from None
        except ValueError as exc:  # not UTF-8, or a NUL in the path
            raise InvalidWorkload([FieldError("", f"cannot read {text}: {exc}")]) from None
    try:
        return json.loads(raw, parse_constant=_reject_constant)
    except (json.JSONDecodeError, ValueError) as exc:
        raise InvalidWorkload([FieldError("", f"not valid JSON: {exc}")]) from None
    except RecursionError:
        raise InvalidWorkload([FieldError("", "not valid JSON: nested too deeply")]) from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def workload_warnings(w: Workload) -> list[str]:
    """Suspicious but valid input: names that match nothing."""
    models = {d.model for d in w.devices}
    domains = {d.domain for d in w.devices if d.domain is not None}
    warnings: list[str] = []
    for j in w.jobs:
        for m in sorted(set(j.allowed_models or ()) - models):
            warnings.append(f"job {j.id!r}: allowed model {m!r} matches no device")
        for m in sorted(set(j.speed_on) - models):
            warnings.append(f"job {j.id!r}: speed_on model {m!r} matches no device")
    for name in sorted(set(w.power.domains) - domains):
        warnings.append(f"power.domains: domain {name!r} has no devices")
    for name in sorted(set(w.teams) - {j.team_name for j in w.jobs}):
        warnings.append(f"teams: team {name!r} has no jobs")
    return warnings
