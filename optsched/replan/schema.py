"""The change document a re-plan reads, what applying it to a workload means, and the re-plan's result.

A change (JSON, every field optional):

    {"device_failures": [{"device": "h100-r1", "count": 2}], "device_repairs": [{"device": "l4-r2", "count": 1}],
     "budget_w": 9000, "domains": {"rack1": 5000}, "add_jobs": [<job>], "remove_jobs": ["etl"], "pin": ["train"]}

Applied in this order: repairs add devices to a group and failures take them away (a group left with none is
dropped); `budget_w` replaces the fleet budget and `domains` the budgets it names (the others stay); jobs in
`remove_jobs` go, then `add_jobs` (workload jobs, validated as such) join, so a job removed and added under the
same id is replaced. `pin` names running jobs that must keep their device groups and counts (their caps may
still change) unless that became impossible; a replaced job starts afresh and cannot be pinned. Validation
reports every problem at once with its JSON path (`device_failures[0].device`, `add_jobs[1].work_hours`); checks
against the workload and the plan come from `apply_change` and `optsched.replan.replan`.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationError

from optsched.schema.errors import FieldError, InvalidWorkload
from optsched.schema.limits import check_document
from optsched.schema.plan import Allocation, Plan
from optsched.schema.workload import MAX_LISTED_ERRORS, IdMap, Job, Workload, _read_json, field_errors
from optsched.schema.workload import Id as WorkloadId

# Strict scalars: a count of 2.0, a budget of "9000" or true is an error, not a coercion.
# Ids are the workload's (normalised, visible characters only), strictly strings.
Id = Annotated[WorkloadId, Strict()]
Watts = Annotated[float, Strict(), Field(ge=0, le=1e9)]
Count = Annotated[int, Strict(), Field(ge=1, le=1_000_000)]


class InvalidChange(InvalidWorkload):
    """A change document failed validation (alone or against the workload and plan); an InvalidWorkload, so every
    handler of bad input takes it as one. `errors` holds the paths inside the change document."""

    def __init__(self, errors: list[FieldError]):
        super().__init__(errors)
        lines = "\n".join(f"  {e}" for e in self.errors)
        self.args = (f"invalid change ({len(self.errors)} problem(s)); fix these fields:\n{lines}",)


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class DeviceCount(_Strict):
    device: Id = Field(description="Device group id.")
    count: Count = Field(description="Devices of the group that failed (or were repaired).")


class Change(_Strict):
    """What changed since the plan was made; every field optional (an empty change re-plans as it is)."""

    device_failures: tuple[DeviceCount, ...] = Field(default=(), max_length=10_000)
    device_repairs: tuple[DeviceCount, ...] = Field(default=(), max_length=10_000)
    budget_w: Watts | None = Field(default=None, description="New fleet budget in watts; absent: unchanged.")
    domains: IdMap[Watts] = Field(default_factory=dict, description="New budgets of these domains, in watts.")
    add_jobs: tuple[Job, ...] = Field(default=(), max_length=100_000)
    remove_jobs: tuple[Id, ...] = Field(default=(), max_length=100_000)
    pin: tuple[Id, ...] = Field(default=(), max_length=100_000, description="Running jobs that keep their devices.")

    @classmethod
    def load(cls, source: Change | Mapping[str, Any] | str | Path) -> Change:
        """A change from an object, a dict, a JSON file path or JSON text; InvalidChange lists every problem."""
        if isinstance(source, Change):
            return source
        try:
            if isinstance(source, (str, Path)):
                source = _read_json(source)
            check_document(source)
        except InvalidWorkload as exc:
            raise InvalidChange(exc.errors) from None
        try:
            change = cls.model_validate(source)
        except ValidationError as exc:
            raise InvalidChange(field_errors(exc)) from None
        problems = _own_problems(change)
        if problems:
            raise InvalidChange(problems[:MAX_LISTED_ERRORS])
        return change


def _own_problems(c: Change) -> list[FieldError]:
    """Within the document: no id twice in one list, no job both removed and pinned, no new job twice."""
    problems: list[FieldError] = []
    for name, ids in (("remove_jobs", c.remove_jobs), ("pin", c.pin), ("add_jobs", [j.id for j in c.add_jobs])):
        seen: dict[str, int] = {}
        for i, job_id in enumerate(ids):
            if job_id in seen:
                path = f"{name}[{i}].id" if name == "add_jobs" else f"{name}[{i}]"
                problems.append(FieldError(path, f"job {job_id!r} is listed twice (also {name}[{seen[job_id]}])"))
            seen.setdefault(job_id, i)
    removed = set(c.remove_jobs)
    for i, job_id in enumerate(c.pin):
        if job_id in removed:
            problems.append(
                FieldError(f"pin[{i}]", f"job {job_id!r} is removed (or replaced) by this change; it cannot be pinned")
            )
    return problems


def apply_change(
    workload: Workload, change: Change | Mapping[str, Any] | str | Path, *, original: Workload | None = None
) -> Workload:
    """The workload after the change (a new object; the input is never mutated). InvalidChange names every
    problem against the workload with its path in the change: unknown device groups or jobs, more failures than
    devices, repairs that would give a group more devices than it had originally, a new job whose id is taken, a
    pinned job that no longer exists.

    A repair brings back a device that failed, so a group never ends with more devices than in `original` (the
    workload the first plan of a chain of re-plans was made for; default: `workload` itself)."""
    change = Change.load(change)
    problems: list[FieldError] = []
    groups = {g.id: g for g in workload.devices}
    counts = {g.id: g.count for g in workload.devices}
    originally = {g.id: g.count for g in (original or workload).devices}
    for name, entries, sign in (
        ("device_repairs", change.device_repairs, 1),
        ("device_failures", change.device_failures, -1),
    ):
        for i, entry in enumerate(entries):
            if entry.device not in groups:
                problems.append(FieldError(f"{name}[{i}].device", f"unknown device group {entry.device!r}"))
            else:
                counts[entry.device] += sign * entry.count
    for i, entry in enumerate(change.device_failures):
        left = counts.get(entry.device, 0)
        if entry.device in groups and left < 0:
            repaired = sum(r.count for r in change.device_repairs if r.device == entry.device)
            problems.append(
                FieldError(
                    f"device_failures[{i}].count",
                    f"group {entry.device!r} has {groups[entry.device].count + repaired} devices; "
                    f"{groups[entry.device].count + repaired - left} failures listed for it",
                )
            )
            counts[entry.device] = 0  # report the group once
    for i, entry in enumerate(change.device_repairs):
        most = max(originally.get(entry.device, 0), groups[entry.device].count) if entry.device in groups else 0
        if entry.device in groups and counts[entry.device] > most:
            problems.append(
                FieldError(
                    f"device_repairs[{i}].count",
                    f"group {entry.device!r} would have {counts[entry.device]:,} devices after the repairs; it had "
                    f"{most:,}: a repair brings back a device that failed",
                )
            )
            counts[entry.device] = most  # report the group once
    devices = [g.model_copy(update={"count": counts[g.id]}) for g in workload.devices if counts[g.id] > 0]
    if not devices and not problems:
        problems.append(
            FieldError("device_failures", "every device of the fleet would have failed; nothing is left to plan")
        )

    ids = {j.id for j in workload.jobs}
    for i, job_id in enumerate(change.remove_jobs):
        if job_id not in ids:
            problems.append(FieldError(f"remove_jobs[{i}]", f"unknown job {job_id!r}"))
    removed = set(change.remove_jobs)
    kept = [j for j in workload.jobs if j.id not in removed]
    for i, job in enumerate(change.add_jobs):
        if job.id in ids and job.id not in removed:
            problems.append(
                FieldError(
                    f"add_jobs[{i}].id", f"job {job.id!r} already exists; remove it in the same change to replace it"
                )
            )
    final_ids = {j.id for j in kept} | {j.id for j in change.add_jobs}
    for i, job_id in enumerate(change.pin):
        if job_id not in final_ids:
            problems.append(FieldError(f"pin[{i}]", f"unknown job {job_id!r}"))
    if problems:
        raise InvalidChange(problems[:MAX_LISTED_ERRORS])

    power = workload.power
    power = power.model_copy(
        update={
            "budget_w": power.budget_w if change.budget_w is None else change.budget_w,
            "domains": {**power.domains, **change.domains},
        }
    )
    document = {
        **workload.model_dump(mode="json"),
        "devices": [d.model_dump(mode="json") for d in devices],
        "jobs": [j.model_dump(mode="json") for j in (*kept, *change.add_jobs)],
        "power": power.model_dump(mode="json"),
    }
    try:
        return Workload.load(document)
    except InvalidWorkload as exc:
        # Only what the change brought in can be wrong here (a new job's `after` naming no job, ...).
        raise InvalidChange([_change_path(e, len(kept)) for e in exc.errors]) from None


def _change_path(error: FieldError, first_added: int) -> FieldError:
    """jobs[k] of the changed workload is add_jobs[k - first_added] of the change; other paths say where they are."""
    path = error.path
    if path.startswith("jobs["):
        k = int(path[5 : path.index("]")])
        if k >= first_added:
            return FieldError(f"add_jobs[{k - first_added}]{path[path.index(']') + 1:]}", error.message)
    return FieldError("", f"the changed workload is invalid at {path or '<document>'}: {error.message}")


class ChangeKind(StrEnum):
    kept = "kept"  # same device groups, counts and caps (or not running before and after)
    recapped = "recapped"  # same device groups and counts, other caps: not a move, no restart
    resized = "resized"  # same device groups, other counts: a restart
    moved = "moved"  # other device groups: a restart
    started = "started"  # not running before, running now
    stopped = "stopped"  # running before, not now


class Reason(StrEnum):
    unchanged = "unchanged"
    failed_device = "failed_device"  # a group it used lost devices it needed
    budget = "budget"  # a budget over it was lowered below what the plan drew
    better_use = "better_use"  # everything else: the devices or watts serve the objective better elsewhere
    added = "added"  # a job the change added
    removed = "removed"  # a job the change removed
    pinned = "pinned"  # pinned, and it kept its devices


MOVES = frozenset({ChangeKind.resized, ChangeKind.moved, ChangeKind.stopped})


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class JobChange(_Frozen):
    job: str
    kind: ChangeKind
    reason: Reason
    detail: str = Field(description="The reason in words, with the numbers behind it.")
    restart_hours: float = Field(
        description="Hours of its run the job loses to this change (move_cost_hours if moved)."
    )
    pinned: bool = False
    before: tuple[Allocation, ...] = Field(default=(), description="Its allocations in the current plan.")
    after: tuple[Allocation, ...] = Field(default=(), description="Its allocations in the new plan.")


class PinBreak(_Frozen):
    job: str
    reason: str


class Replan(_Frozen):
    """A re-plan: the new plan for the changed workload and what it changes, job by job.

    The new plan maximises (min_power: minimises) the workload's objective minus (plus) `move_cost`; its status
    and the `net_*` figures are about that net objective, so `plan.bound` and `plan.gap` (which would be about
    the objective alone) are left empty. Under a fairness objective the max-min comes first, without the move
    cost, and the move cost joins the second solve: the most weighted speedup minus the move cost among the plans
    within the tolerance of the max-min (optsched.solve.fairness)."""

    workload: Workload = Field(description="The changed workload the plan is for (verify the plan against it).")
    plan: Plan
    changes: tuple[JobChange, ...] = Field(
        default=(), description="Per job: removed running jobs, then the workload's jobs."
    )
    moved: int = Field(description="Running jobs whose device groups or counts changed (resized, moved, stopped).")
    restart_hours: float = Field(description="Hours of work lost to restarts: moved x move_cost_hours.")
    move_cost_hours: float
    move_cost: float = Field(description=(
        "The moves' cost in objective units (weighted speedup, or W for min_power; under a fairness objective "
        "weighted speedup, the units of its second solve)."))
    net_objective: float | None = Field(description=(
        "objective - move_cost (max) or objective + move_cost (min); under a fairness objective weighted_speedup - "
        "move_cost among the plans within the tolerance of the max-min."))
    net_bound: float | None = Field(description="Proven bound on the net objective.")
    net_gap: float | None
    pins_impossible: tuple[PinBreak, ...] = ()
    solve_seconds: float

    @property
    def feasible(self) -> bool:
        return self.plan.feasible
