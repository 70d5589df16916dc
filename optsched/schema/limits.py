"""Limits on what one request may ask of optsched: the size of its document and of the model it builds.

- `check_document(document)`: before validation, a JSON document (a workload, or a request holding one) has
  at most MAX_DEPTH levels of nesting, MAX_ITEMS items in any one array or object and MAX_VALUES values in all.
  Validation costs a few microseconds per problem found, so without this a 3 MB list of a million wrong items
  would hold a service for seconds; with it, the cost of any document is bounded. `Workload.load` and the REST
  service's body guard call it.
- `check_variables(workload, max_variables)`: jobs x (device groups x their power levels), the number of
  placement variables n[j,g,l] the model would have, is at most `max_variables` (the service's
  OPTSCHED_MAX_VARIABLES).

Both raise InvalidWorkload naming the path, the size found and the limit.

Queueing studies (optsched.queueing.study.check_study) are held to the same `Limits` (devices, device groups,
power levels) and to two limits of their own, whatever the service's settings: MAX_SIMULATION_WORK, the work of
a simulation (`simulation_work`) checked before it starts, and MAX_FRONT_POINTS, the points of the Pareto front
a result stores (a longer front is thinned evenly).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from optsched.schema.errors import FieldError, InvalidWorkload

if TYPE_CHECKING:
    from optsched.schema.workload import DeviceGroup, Workload

# A workload is 4 levels deep (jobs[i].speed_on.<model>); a request wraps it in one more.
MAX_DEPTH = 32
# Items in one array or object: far above any real fleet or queue (the benchmark's XL has 5,000 jobs).
MAX_ITEMS = 100_000
# Values in the whole document (every array, object, string and number): about 10x the XL workload.
MAX_VALUES = 500_000
DEFAULT_MAX_VARIABLES = 2_000_000
# Points of a queueing study's Pareto front a result stores at most: 10 power levels and 4 classes without caps
# gave 9,990 points (18.6 MB of JSON); past this, the front keeps its ends and points evenly spaced between.
MAX_FRONT_POINTS = 200
# A simulated job costs ciw about 30 us plus 0.13 us per server it scans (10,000 jobs on 1 / 1,000 / 5,000
# servers: 0.3 / 1.65 / 6.8 s), so a job is worth SIMULATION_JOB_SERVERS servers, and a simulation's work is
# replications x jobs per replication x (servers + SIMULATION_JOB_SERVERS).
SIMULATION_JOB_SERVERS = 230
# About 5 minutes of one core; the defaults (10 x 10,000 jobs) stay below it up to ~25,000 servers.
MAX_SIMULATION_WORK = 2_500_000_000


def simulation_work(replications: int, jobs_per_replication: int, servers: int) -> int:
    """replications x jobs per replication x (servers + SIMULATION_JOB_SERVERS): what MAX_SIMULATION_WORK bounds."""
    return replications * jobs_per_replication * (servers + SIMULATION_JOB_SERVERS)


def placement_variables(workload: Workload) -> int:
    """jobs x sum over device groups of their power levels: the n[j,g,l] the model has at most."""
    return len(workload.jobs) * sum(len(g.power_levels) for g in workload.devices)


def check_variables(workload: Workload, max_variables: int, *, path: str = "") -> None:
    """InvalidWorkload unless the workload's placement model has at most `max_variables` variables."""
    variables = placement_variables(workload)
    if variables <= max_variables:
        return
    levels = sum(len(g.power_levels) for g in workload.devices)
    message = (
        f"{len(workload.jobs):,} jobs x {levels:,} power levels over {len(workload.devices):,} device groups = "
        f"{variables:,} placement variables, above the limit of {max_variables:,} (OPTSCHED_MAX_VARIABLES); "
        "split the workload into smaller ones or ask the operator to raise the limit"
    )
    raise InvalidWorkload([FieldError(_join(path, "jobs"), message)])


@dataclass(frozen=True)
class Limits:
    """What one request may ask of a service (its OPTSCHED_MAX_* settings); None: no limit."""

    jobs: int | None = None
    devices: int | None = None  # the sum of the device groups' counts
    device_groups: int | None = None
    levels: int | None = None  # power levels of one device group
    time_limit_s: float | None = None  # options.time_limit_s
    variables: int | None = None


def check_size(workload: Workload, limits: Limits, *, path: str = "", jobs: int | None = None) -> None:
    """InvalidWorkload listing every limit the workload is above, each at its path with the setting to raise;
    `jobs` counts something else than the workload's jobs (a verified plan's placements)."""
    errors: list[FieldError] = []
    n_jobs = len(workload.jobs) if jobs is None else jobs
    if limits.jobs is not None and n_jobs > limits.jobs:
        errors.append(
            FieldError(_join(path, "jobs"), f"{n_jobs:,} jobs, above the limit of {limits.jobs:,} (OPTSCHED_MAX_JOBS)")
        )
    errors.extend(device_problems(workload.devices, limits, path=path))
    limit_s = workload.options.time_limit_s
    if limits.time_limit_s is not None and limit_s > limits.time_limit_s:
        errors.append(FieldError(
            _join(path, "options.time_limit_s"),
            f"{limit_s:g} s, above this service's ceiling of {limits.time_limit_s:g} s (OPTSCHED_MAX_TIME_LIMIT_S)",
        ))
    if errors:
        raise InvalidWorkload(errors)
    if limits.variables is not None:
        check_variables(workload, limits.variables, path=path)


def device_problems(devices: Sequence[DeviceGroup], limits: Limits, *, path: str = "") -> list[FieldError]:
    """The device groups (a workload's, a study's) against the limits on groups, devices and power levels, each
    problem at its path with the setting to raise."""
    errors: list[FieldError] = []
    if limits.device_groups is not None and len(devices) > limits.device_groups:
        errors.append(
            FieldError(
                _join(path, "devices"),
                f"{len(devices):,} device groups, above the limit of {limits.device_groups:,} "
                "(OPTSCHED_MAX_DEVICE_GROUPS)",
            )
        )
    count = sum(g.count for g in devices)
    if limits.devices is not None and count > limits.devices:
        errors.append(FieldError(
            _join(path, "devices"),
            f"{count:,} devices in all groups, above the limit of {limits.devices:,} (OPTSCHED_MAX_DEVICES)",
        ))
    if limits.levels is not None:
        for i, g in enumerate(devices):
            if len(g.power_levels) > limits.levels:
                errors.append(FieldError(
                    _join(path, f"devices[{i}].power_levels"),
                    f"{len(g.power_levels)} power levels, above the limit of {limits.levels} (OPTSCHED_MAX_LEVELS)",
                ))
    return errors


def check_document(document: Any) -> None:
    """InvalidWorkload if the document nests deeper than MAX_DEPTH, has a container of more than MAX_ITEMS
    items, or more than MAX_VALUES values; iterative, and it stops at the first limit crossed."""
    if not isinstance(document, (dict, list, tuple)):
        return
    values = 1
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(document, ())]
    while stack:
        value, parts = stack.pop()
        children = value.values() if isinstance(value, dict) else value
        keys = value.keys() if isinstance(value, dict) else range(len(value))
        if len(parts) >= MAX_DEPTH:
            raise InvalidWorkload(
                [FieldError(_path(parts), f"nested more than {MAX_DEPTH} levels deep; a workload needs 5")]
            )
        if len(value) > MAX_ITEMS:
            raise InvalidWorkload(
                [
                    FieldError(
                        _path(parts), f"{len(value):,} items; at most {MAX_ITEMS:,} are accepted in one list or object"
                    )
                ]
            )
        values += len(value)
        if values > MAX_VALUES:
            raise InvalidWorkload(
                [FieldError("", f"more than {MAX_VALUES:,} values in the document; split it into smaller workloads")]
            )
        for key, child in zip(keys, children, strict=True):
            if isinstance(child, (dict, list, tuple)):
                stack.append((child, (*parts, key)))


def json_path(parts: tuple[str | int, ...]) -> str:
    """`jobs[3].id` from ("jobs", 3, "id")."""
    return _path(parts)


def _path(parts: tuple[str | int, ...]) -> str:
    path = ""
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def _join(prefix: str, path: str) -> str:
    return f"{prefix}.{path}" if prefix else path
