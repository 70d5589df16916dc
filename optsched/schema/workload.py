"""The workload: device groups, jobs and power budgets (typed, frozen, validated as a whole)."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from optsched.schema.catalog import catalog_entry
from optsched.schema.errors import FieldError, InvalidWorkload
from optsched.schema.limits import check_document


# The objectives a workload may name; optsched.model.objectives registers one implementation for each (a test
# checks the two agree), so the schema does not depend on the model.
OBJECTIVE_NAMES = ("weighted_speedup", "min_power")


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

Id = Annotated[str, Field(min_length=1, max_length=200)]
PositiveFloat = Annotated[float, Field(gt=0)]
NonNegativeFloat = Annotated[float, Field(ge=0)]
# Quantities that enter the model's arithmetic stay within these bounds, far beyond any real fleet, so that
# runtimes, speedups and watts stay finite: a speed of 5e-324 makes every speedup 0, work of 1e308 every
# runtime infinite (found by tests/reliability/test_bad_input.py).
Speed = Annotated[float, Field(ge=1e-6, le=1e6)]
Watts = Annotated[float, Field(gt=0, le=1e6)]
IdleWatts = Annotated[float, Field(ge=0, le=1e6)]
Hours = Annotated[float, Field(gt=0, le=1e9)]
Weight = Annotated[float, Field(ge=1e-6, le=1e6)]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class PowerLevel(Frozen):
    cap_w: Watts = Field(description="Power cap of one device at this level, in watts.")
    speed: Speed = Field(description="Speed relative to the reference device (1.0).")


class DeviceGroup(Frozen):
    id: Id
    model: Id = Field(description="Device model, e.g. H100-SXM; catalog models fill the fields left out.")
    count: int = Field(ge=1, le=1_000_000, description="Number of identical devices in the group.")
    memory_gb: PositiveFloat | None = None
    domain: Id | None = Field(default=None, description="Power domain (rack, PDU) the group belongs to.")
    idle_w: IdleWatts = Field(default=0.0, description="Draw of each device no job uses, in watts.")
    power_levels: tuple[PowerLevel, ...] = Field(default=(), max_length=64)

    @model_validator(mode="before")
    @classmethod
    def fill_from_catalog(cls, data: Any) -> Any:
        """Fields left out are taken from the shipped catalog when the model is known."""
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
    parallel_fraction: float = Field(ge=0, le=1, description="Amdahl parallel fraction p.")
    priority: Priority = Priority.normal
    weight: Weight = 1.0
    deadline_hours: Hours | None = None
    min_devices: int = Field(default=1, ge=1, le=1_000_000)
    max_devices: int | None = Field(default=None, ge=1, le=1_000_000)
    memory_gb: NonNegativeFloat | None = Field(default=None, description="Memory needed on each device.")
    allowed_models: tuple[Id, ...] | None = None
    speed_on: dict[Id, Speed] = Field(
        default_factory=dict, description="Model -> multiplier of that model's speed for this job."
    )
    release_hours: NonNegativeFloat = Field(
        default=0.0, description="Earliest start, in hours after the night starts (plan_night only)."
    )
    after: tuple[Id, ...] = Field(
        default=(), max_length=10_000, description="Ids of jobs that must finish before this one starts (plan_night only)."
    )

    @property
    def is_hard(self) -> bool:
        return self.priority in HARD_PRIORITIES

    @property
    def objective_weight(self) -> float:
        return PRIORITY_WEIGHT[self.priority] * self.weight


class PowerWindow(Frozen):
    """Hours [from_hours, to_hours) after the night starts in which budget_w replaces the global budget."""

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
    domains: dict[Id, NonNegativeFloat] = Field(default_factory=dict, description="Cap per power domain, in watts.")
    windows: tuple[PowerWindow, ...] = Field(
        default=(), max_length=1_000, description="Hours in which another global budget applies (plan_night only)."
    )

    def budget_at(self, hours: float) -> float | None:
        """The global budget in force at `hours` after the night starts (W): a window's, else budget_w."""
        for window in self.windows:
            if window.from_hours <= hours < window.to_hours:
                return window.budget_w
        return self.budget_w


class Options(Frozen):
    time_limit_s: float = Field(default=30.0, gt=0, le=86_400)
    mip_gap: float = Field(
        default=0.01, ge=0, le=1, description="Relative gap at which a plan counts as optimal (bench/results/planner.md)."
    )


class Workload(Frozen):
    name: str = Field(default="workload", max_length=200)
    devices: tuple[DeviceGroup, ...] = Field(min_length=1)
    jobs: tuple[Job, ...] = ()
    power: Power = Power()
    objective: str = "weighted_speedup"
    options: Options = Options()

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
    def load(cls, source: Workload | Mapping[str, Any] | str | Path) -> Workload:
        """A workload from an object, a dict, a JSON file path or a JSON string; InvalidWorkload lists every problem."""
        if isinstance(source, Workload):
            return source
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
    for kind, items in (("devices", w.devices), ("jobs", w.jobs)):
        seen: dict[str, int] = {}
        for i, item in enumerate(items):
            if item.id in seen:
                problems.append(FieldError(f"{kind}[{i}].id", f"duplicate id {item.id!r} (also {kind}[{seen[item.id]}])"))
            seen.setdefault(item.id, i)
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
    problems.extend(_dependency_problems(w.jobs))
    problems.extend(_window_problems(w.power.windows))
    return problems


def _dependency_problems(jobs: tuple[Job, ...]) -> list[FieldError]:
    """Every `after` id names another job, and the dependencies form a DAG (each cycle is named)."""
    ids = {j.id for j in jobs}
    problems = []
    for i, j in enumerate(jobs):
        for k, other in enumerate(j.after):
            if other == j.id:
                problems.append(FieldError(f"jobs[{i}].after[{k}]", f"job {j.id!r} cannot come after itself"))
            elif other not in ids:
                problems.append(FieldError(f"jobs[{i}].after[{k}]", f"unknown job id {other!r}"))
    index = {j.id: i for i, j in enumerate(jobs)}
    for cycle in dependency_cycles(jobs):
        path = " -> ".join(repr(c) for c in (*cycle, cycle[0]))
        problems.append(
            FieldError(f"jobs[{index[cycle[0]]}].after", f"dependency cycle through jobs {list(cycle)}: {path}")
        )
    return problems


def dependency_cycles(jobs: tuple[Job, ...]) -> list[tuple[str, ...]]:
    """Cycles of the `after` graph (self-loops and unknown ids ignored), each once, from its first job in queue order."""
    ids = {j.id for j in jobs}
    order = {j.id: i for i, j in enumerate(jobs)}
    preds = {j.id: [p for p in dict.fromkeys(j.after) if p in ids and p != j.id] for j in jobs}
    state: dict[str, int] = {}  # 1 on the current path, 2 finished
    cycles: list[tuple[str, ...]] = []
    for root in (j.id for j in jobs):
        if root in state:
            continue
        path: list[str] = [root]
        state[root] = 1
        stack = [iter(preds[root])]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                # path[k] comes after path[k + 1]: reversed, the cycle reads in execution order.
                cycle = path[path.index(nxt) :][::-1]
                first = min(range(len(cycle)), key=lambda k: order[cycle[k]])
                rotated = tuple(cycle[first:] + cycle[:first])
                if rotated not in cycles:
                    cycles.append(rotated)
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(preds[nxt]))
    return cycles


def _window_problems(windows: tuple[PowerWindow, ...]) -> list[FieldError]:
    """Windows do not overlap: at most one replaces the global budget at any instant."""
    problems = []
    reach: int | None = None  # the window reaching furthest among those starting earlier
    for b in sorted(range(len(windows)), key=lambda i: (windows[i].from_hours, i)):
        if reach is not None and windows[b].from_hours < windows[reach].to_hours:
            a = reach
            problems.append(
                FieldError(
                    f"power.windows[{b}]",
                    f"window {windows[b].from_hours:g}-{windows[b].to_hours:g} h overlaps window "
                    f"power.windows[{a}] ({windows[a].from_hours:g}-{windows[a].to_hours:g} h)",
                )
            )
        if reach is None or windows[b].to_hours > windows[reach].to_hours:
            reach = b
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
        else:
            out.append(FieldError(prefix, err["msg"]))
    if total > MAX_LISTED_ERRORS:
        out = out[:MAX_LISTED_ERRORS]
        out.append(FieldError("", f"and {total - MAX_LISTED_ERRORS:,} more problems not listed; fix these first"))
    return out


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
    """Suspicious but valid input: names that match nothing, night-only fields the core planner ignores."""
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
    if w.power.windows or any(j.release_hours or j.after for j in w.jobs):
        warnings.append("release_hours/after/power.windows are used by plan_night only; this plan ignores them")
    return warnings
