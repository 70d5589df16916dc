"""A queueing study and its result: frozen, strictly typed, validated as a whole (every problem with its JSON path).

A study pools identical servers: every device group is of one model, with the same power levels and idle draw, and
every class uses `devices_per_job` devices of that model per job (a server is such a set; the number of servers is
sum over groups of floor(count / devices_per_job)). Classes that would need other models or server sizes are
refused with the path of the offending field rather than modelled wrongly.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    ValidationError,
    model_validator,
)

from optsched.queueing.phasetype import Law, law_problem
from optsched.schema.errors import FieldError, InvalidStudy
from optsched.schema.limits import check_document
from optsched.schema.workload import (
    MAX_LISTED_ERRORS,
    DeviceGroup,
    Id,
    IdMap,
    Priority,
    field_errors,
    filled_from_catalog,
)

# Enumerating cap levels for the classes without cap_w evaluates this many combinations at most.
MAX_COMBINATIONS = 10_000
MAX_CLASSES = 16
# Two caps closer than this (W) are the same level.
CAP_TOLERANCE_W = 1e-6

# Class names are ids: normalised and of visible characters only, as the workload's (strictly strings).
Name = Annotated[Id, Strict()]
Rate = Annotated[float, Strict(), Field(gt=0, le=1e6)]
Hours = Annotated[float, Strict(), Field(gt=0, le=1e9)]
Scv = Annotated[float, Strict(), Field(ge=0, le=100)]
Fraction = Annotated[float, Strict(), Field(ge=0, le=1)]
Watts = Annotated[float, Strict(), Field(gt=0, le=1e6)]
Count = Annotated[int, Strict(), Field(ge=1, le=1_000_000)]


class Discipline(StrEnum):
    non_preemptive = "non_preemptive"
    preemptive = "preemptive"  # preemptive-resume: a preempted job continues where it stopped


class Method(StrEnum):
    analytic = "analytic"
    simulation = "simulation"


class StudyStatus(StrEnum):
    ok = "ok"  # stable, and every target met (or none given)
    unstable = "unstable"  # offered load at or above the servers, whatever the caps
    targets_missed = "targets_missed"  # stable, but no caps meet every target
    # Simulated: the queue did not settle within the run (near saturation), so its means estimate nothing and no
    # target is reported met or missed; see `reason`, and the analytic figures.
    unsettled = "unsettled"


# Highest priority first: the order in which the queue serves the levels.
PRIORITY_RANK: Mapping[Priority, int] = {p: i for i, p in enumerate(Priority)}


class _Input(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class WorkDistribution(_Input):
    mean: Hours = Field(description="Mean work of a job, in hours on one reference device (speed 1.0).")
    scv: Scv = Field(description="Squared coefficient of variation of the work (1 = exponential, 0 = constant).")
    distribution: Law = Field(
        default=Law.gamma,
        description="The work's law at this mean and scv: gamma (any scv), hyperexponential (two phases, balanced "
        "means; scv >= 1), erlang (scv = 1/k, k = 1..32) or exponential (scv = 1). Both methods use it.",
    )

    @model_validator(mode="after")
    def law_fits(self) -> WorkDistribution:
        problem = law_problem(self.distribution, self.scv)
        if problem:
            raise _StudyProblems([FieldError("distribution", problem)])
        return self


class StudyClass(_Input):
    name: Name
    priority: Priority
    arrival_rate_per_hour: Rate = Field(description="Poisson arrival rate of the class's jobs, per hour.")
    work_hours: WorkDistribution
    parallel_fraction: Fraction = Field(description="Amdahl parallel fraction p of the class's jobs.")
    devices_per_job: Count = 1
    allowed_models: tuple[Name, ...] | None = Field(default=None, max_length=64)
    cap_w: Watts | None = Field(
        default=None, description="Power cap of the class's devices (one of the model's levels); omitted: chosen."
    )


class Target(_Input):
    mean_response_hours: Hours = Field(description="Largest acceptable mean response time (arrival to completion).")


class Study(_Input):
    name: Name = "study"
    discipline: Discipline = Discipline.non_preemptive
    devices: tuple[DeviceGroup, ...] = Field(min_length=1, max_length=1_000)
    classes: tuple[StudyClass, ...] = Field(min_length=1, max_length=MAX_CLASSES)
    targets: IdMap[Target] = Field(default_factory=dict, description="Class name -> target.")

    @model_validator(mode="after")
    def consistent(self) -> Study:
        problems = study_problems(self)
        if problems:
            raise _StudyProblems(problems)
        return self

    @property
    def model(self) -> str:
        """The device model every server is made of."""
        return self.devices[0].model

    @property
    def levels(self) -> tuple[float, ...]:
        """The pool's power caps (W), highest first."""
        return tuple(sorted((lv.cap_w for lv in self.devices[0].power_levels), reverse=True))

    @property
    def devices_per_job(self) -> int:
        return self.classes[0].devices_per_job

    @property
    def servers(self) -> int:
        """c = sum over groups of floor(count / devices_per_job)."""
        return sum(g.count // self.devices_per_job for g in self.devices)

    @property
    def device_count(self) -> int:
        return sum(g.count for g in self.devices)

    def speed_at(self, cap_w: float) -> float:
        """Speed of one device at the level with this cap (reference-device units)."""
        return next(lv.speed for lv in self.devices[0].power_levels if abs(lv.cap_w - cap_w) <= CAP_TOLERANCE_W)


class _StudyProblems(ValueError):
    """Cross-field problems, carried through pydantic so that each keeps its own path."""

    def __init__(self, problems: list[FieldError]):
        super().__init__("; ".join(str(p) for p in problems))
        self.problems = problems


def study_problems(s: Study) -> list[FieldError]:
    """Every cross-field problem of a structurally valid study, each with its JSON path."""
    problems: list[FieldError] = []
    for kind, names in (("devices", [g.id for g in s.devices]), ("classes", [c.name for c in s.classes])):
        seen: dict[str, int] = {}
        field = "id" if kind == "devices" else "name"
        for i, name in enumerate(names):
            if name in seen:
                problems.append(
                    FieldError(f"{kind}[{i}].{field}", f"duplicate {field} {name!r} (also {kind}[{seen[name]}])")
                )
            seen.setdefault(name, i)
    problems.extend(_pool_problems(s))
    problems.extend(_class_problems(s))
    for key in s.targets:
        if key not in {c.name for c in s.classes}:
            problems.append(FieldError(f"targets.{key}", f"no class is named {key!r}; targets are keyed by class name"))
    if not problems:
        free = [c for c in s.classes if c.cap_w is None]
        combinations = len(s.levels) ** len(free)
        if combinations > MAX_COMBINATIONS:
            problems.append(
                FieldError(
                    "classes",
                    f"{len(free)} classes without cap_w x {len(s.levels)} power levels = {combinations:,} cap "
                    f"combinations, above the limit of {MAX_COMBINATIONS:,}; set cap_w on some classes",
                )
            )
    return problems


def _pool_problems(s: Study) -> list[FieldError]:
    """One pool of identical servers: one model, one set of power levels, one idle draw."""
    problems: list[FieldError] = []
    first = s.devices[0]
    for i, g in enumerate(s.devices):
        if not g.power_levels:
            problems.append(
                FieldError(
                    f"devices[{i}].power_levels",
                    f"device {g.id!r} has no power level and model {g.model!r} is not in the catalog",
                )
            )
        caps = [lv.cap_w for lv in g.power_levels]
        if len(set(caps)) != len(caps):
            problems.append(
                FieldError(f"devices[{i}].power_levels", "two levels share one cap_w; a cap must name one speed")
            )
        if i == 0:
            continue
        if g.model != first.model:
            problems.append(
                FieldError(
                    f"devices[{i}].model",
                    f"model {g.model!r} differs from {first.model!r} (devices[0]); a study pools servers of one "
                    "device model, so study each model separately",
                )
            )
        elif sorted((lv.cap_w, lv.speed) for lv in g.power_levels) != sorted(
            (lv.cap_w, lv.speed) for lv in first.power_levels
        ):
            problems.append(
                FieldError(
                    f"devices[{i}].power_levels", "differ from devices[0]'s; servers of one pool must be identical"
                )
            )
        elif g.idle_w != first.idle_w:
            problems.append(
                FieldError(f"devices[{i}].idle_w", f"{g.idle_w:g} W differs from devices[0]'s {first.idle_w:g} W")
            )
    return problems


def _class_problems(s: Study) -> list[FieldError]:
    problems: list[FieldError] = []
    model = s.devices[0].model
    levels = sorted({lv.cap_w for lv in s.devices[0].power_levels}, reverse=True)
    d = s.classes[0].devices_per_job
    for i, c in enumerate(s.classes):
        if c.allowed_models is not None and model not in c.allowed_models:
            problems.append(
                FieldError(
                    f"classes[{i}].allowed_models", f"does not include {model!r}, the model of the study's devices"
                )
            )
        if c.devices_per_job != d:
            problems.append(
                FieldError(
                    f"classes[{i}].devices_per_job",
                    f"{c.devices_per_job} differs from classes[0]'s {d}; all classes share one pool of servers of "
                    "devices_per_job devices each",
                )
            )
        if c.cap_w is not None and levels and not any(abs(c.cap_w - cap) <= CAP_TOLERANCE_W for cap in levels):
            problems.append(
                FieldError(
                    f"classes[{i}].cap_w", f"{c.cap_w:g} W is not a power level of {model!r}; choose one of {levels} W"
                )
            )
    if not any(c.devices_per_job != d for c in s.classes) and sum(g.count // d for g in s.devices) == 0:
        problems.append(
            FieldError(
                "classes[0].devices_per_job", f"no device group has {d} devices, so there is no server of {d} devices"
            )
        )
    return problems


def load_study(source: Study | Mapping[str, Any] | str | Path) -> Study:
    """A study from an object, a dict, a JSON file path or a JSON string; InvalidStudy lists every problem.

    Numbers are never coerced from strings or booleans: the study's own fields are strict types, and each device
    group (filled from the catalog by DeviceGroup's own rule) is validated in pydantic's strict mode."""
    if isinstance(source, Study):
        return source
    if isinstance(source, (str, Path)):
        source = _read_json(source)
    check_document(source)
    problems: list[FieldError] = []
    document = source
    if isinstance(source, Mapping) and isinstance(source.get("devices"), (list, tuple)):
        devices, problems = _strict_devices(source["devices"])
        document = {**source, "devices": devices}
    reported = {p.path.split(".")[0] for p in problems}  # "devices[i]" already checked strictly
    try:
        study = Study.model_validate(document)
    except ValidationError as exc:
        rest = [e for e in _field_errors(exc) if e.path.split(".")[0] not in reported]
        raise InvalidStudy(_capped(problems + rest)) from None
    if problems:
        raise InvalidStudy(_capped(problems))
    return study


def _strict_devices(groups: Sequence[Any]) -> tuple[list[Any], list[FieldError]]:
    """Each group filled from the catalog and validated strictly: DeviceGroup objects where valid, the input
    elsewhere, and the problems with their paths."""
    out: list[Any] = []
    problems: list[FieldError] = []
    for i, group in enumerate(groups):
        if not isinstance(group, Mapping):
            out.append(group)  # the study's own validation names it
            continue
        try:
            out.append(DeviceGroup.model_validate(_tuples(filled_from_catalog(dict(group))), strict=True))
        except ValidationError as exc:
            out.append(group)
            problems.extend(FieldError(_join(f"devices[{i}]", e.path), e.message) for e in field_errors(exc))
    return out, problems


def _tuples(value: Any) -> Any:
    """Lists as tuples, recursively (strict mode takes only tuples for tuple fields)."""
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    return value


def _join(prefix: str, path: str) -> str:
    if not path:
        return prefix
    return f"{prefix}{path}" if path.startswith("[") else f"{prefix}.{path}"


def _field_errors(exc: ValidationError) -> list[FieldError]:
    """pydantic's errors as (JSON path, message), our cross-field problems expanded; a list's "too short" error is
    dropped when it only counts the items that failed (each of which has its own error)."""
    out: list[FieldError] = []
    for err in exc.errors(include_url=False):
        cause = (err.get("ctx") or {}).get("error")
        if isinstance(cause, _StudyProblems):
            at = _json_path(err["loc"])
            out.extend(FieldError(_join(at, p.path), p.message) if at else p for p in cause.problems)
        elif (
            err["type"] == "too_short"
            and isinstance(err.get("input"), (list, tuple))
            and len(err["input"]) >= err["ctx"]["min_length"]
        ):
            continue
        else:
            out.append(FieldError(_json_path(err["loc"]), err["msg"]))
    return _capped(out)


def _capped(problems: list[FieldError]) -> list[FieldError]:
    """At most MAX_LISTED_ERRORS problems, then one entry counting the rest."""
    if len(problems) <= MAX_LISTED_ERRORS:
        return problems
    rest = len(problems) - MAX_LISTED_ERRORS
    return [*problems[:MAX_LISTED_ERRORS], FieldError("", f"and {rest:,} more problems not listed; fix these first")]


def _json_path(loc: tuple[Any, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def _read_json(source: str | Path) -> Any:
    text = str(source)
    if isinstance(source, str) and text.lstrip().startswith("{"):
        raw = text
    else:
        try:
            raw = Path(source).read_text(encoding="utf-8")
        except (OSError, ValueError) as exc:
            raise InvalidStudy(
                [FieldError("", f"cannot read {text}: {getattr(exc, 'strerror', None) or exc}")]
            ) from None
    try:
        return json.loads(raw, parse_constant=_reject_constant)
    except ValueError as exc:
        raise InvalidStudy([FieldError("", f"not valid JSON: {exc}")]) from None
    except RecursionError:
        raise InvalidStudy([FieldError("", "not valid JSON: nested too deeply")]) from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


# -- the result ------------------------------------------------------------------------------------------------------


class _Output(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ClassResult(_Output):
    name: str
    priority: Priority
    cap_w: float = Field(description="Power cap of the class's devices, in watts.")
    arrival_rate_per_hour: float
    service_mean_hours: float = Field(description="Mean service time: work / Amdahl speedup of a server at cap_w.")
    service_scv: float
    utilization: float | None = Field(
        description="Fraction of the servers' time busy with this class (None: unstable)."
    )
    mean_wait_hours: float | None = Field(
        description="Mean response minus mean service (queueing, and preempted time)."
    )
    mean_response_hours: float | None = Field(description="Mean time from arrival to completion.")
    wait_half_width_hours: float | None = Field(default=None, description="95 % confidence half-width (simulation).")
    response_half_width_hours: float | None = Field(
        default=None, description="95 % confidence half-width (simulation)."
    )
    mean_number_in_system: float | None = Field(
        default=None, description="Mean jobs of the class waiting or in service (Little: rate x mean response)."
    )
    truncated_mass: float | None = Field(
        default=None, description="Exact engine: probability mass its truncated chain leaves out (estimated)."
    )
    method_detail: str = Field(
        description="'exact: <formula>' (a closed form, or the exact engine with its law and truncated mass), "
        "'approximation: <name>; error measured ...; exact engine: <why not>' or 'simulation: ...'."
    )
    target_response_hours: float | None = None
    meets_target: bool | None = Field(default=None, description="None without a target or when unstable.")


class FrontPoint(_Output):
    caps: dict[str, float] = Field(description="Class name -> cap (W).")
    mean_power_w: float
    high_priority_response_hours: float = Field(description="Arrival-weighted mean response of the top priority level.")
    weighted_response_hours: float = Field(description="Arrival-weighted mean response over all classes.")
    response_hours: dict[str, float]
    meets_targets: bool
    exact: bool = Field(
        default=False,
        description="Whether every class's figures are exact (closed form or the exact engine); else the "
        "approximation's, where the study's exact time ran out or the chain was too large.",
    )


class SimulationInfo(_Output):
    library: str
    replications: int
    jobs_per_replication: int = Field(
        description="Expected arrivals simulated per replication, warm-up included (of the last, longest run)."
    )
    warmup_fraction: float = Field(description="Mean share of each replication's time deleted as warm-up.")
    warmup: str = Field(default="MSER-5", description="How the warm-up was chosen: MSER-5 per replication, or fixed.")
    warmup_at_limit: int = Field(
        default=0, description="Replications whose MSER-5 warm-up reached the end of its search (not settled)."
    )
    censored_jobs: int = Field(default=0, description="Measured arrivals still in the system when the run ended.")
    relative_half_width: float = Field(
        default=0.05, description="The response half-width asked, as a share of each class's mean."
    )
    precision_met: bool = Field(default=True, description="Whether every class's interval is as narrow as asked.")
    doublings: int = Field(default=0, description="Times the replications were run again, twice as long.")
    seed: int
    service_distribution: str
    preemption: str | None
    confidence: float = 0.95
    settled: bool = Field(
        default=True,
        description="Whether the queue reached a steady state within the run: its relaxation time is well within "
        "the run and the responses do not drift upward from the first half of the measured window to the second.",
    )
    drift_hours: float | None = Field(
        default=None, description="Mean response of the second half of the measured window minus the first's."
    )
    drift_half_width_hours: float | None = Field(default=None, description="95 % confidence half-width of the drift.")


class StudyResult(_Output):
    study: str
    discipline: Discipline
    method: Method
    status: StudyStatus
    stable: bool
    reason: str | None = Field(description="Why the status is not ok; None when it is.")
    device_model: str
    devices: int
    devices_per_job: int
    servers: int
    offered_load: float = Field(description="Sum over classes of arrival rate x mean service, in servers.")
    mean_power_w: float | None = Field(description="Idle draw of idle devices plus each class's cap while busy.")
    caps: dict[str, float] = Field(description="Class name -> cap (W), given or chosen.")
    caps_chosen: tuple[str, ...] = Field(description="Classes whose cap the study chose.")
    meets_targets: bool | None
    classes: tuple[ClassResult, ...]
    front: tuple[FrontPoint, ...] = Field(
        description="Pareto front of mean power against high-priority response over the caps evaluated (analytic); "
        "at most MAX_FRONT_POINTS (optsched.schema.limits) points: its ends and points evenly spaced between."
    )
    front_points: int = Field(default=0, description="Points of the whole Pareto front, before thinning.")
    combinations_evaluated: int
    simulation: SimulationInfo | None = None
    wall_seconds: float

    @property
    def ok(self) -> bool:
        return self.status == StudyStatus.ok
