"""The plan: placements, power and the solver's verdict (immutable; what the CLI prints and the API returns)."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Status(StrEnum):
    optimal = "optimal"  # proven optimal within the requested mip_gap
    time_limit = "time_limit"  # a feasible plan, proven only within `gap`
    infeasible = "infeasible"  # no plan satisfies the hard constraints; see `diagnosis`
    no_solution = "no_solution"  # time ran out (or the solver failed) before any plan was found
    heuristic = "heuristic"  # a feasible plan from a baseline rule, with no optimality claim


FEASIBLE_STATUSES = frozenset({Status.optimal, Status.time_limit, Status.heuristic})


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Allocation(_Frozen):
    device: str = Field(description="Device group id.")
    count: int = Field(ge=1, description="Devices of the group given to the job at this cap.")
    cap_w: float = Field(description="Power cap of each of these devices, in watts.")
    speed: float = Field(description="Speed of each device for this job (level speed x speed_on).")
    work_fraction: float = Field(description="Share of the parallel part carried by EACH device: speed / R.")


class Placement(_Frozen):
    job: str
    priority: str
    admitted: bool
    speedup: float = Field(description="Heterogeneous Amdahl speedup S = 1 / ((1-p)/s_host + p/R); 0 if not admitted.")
    runtime_hours: float | None = Field(description="work_hours / S; null if not admitted.")
    deadline_hours: float | None = None
    meets_deadline: bool | None = Field(description="null when the job has no deadline.")
    allocations: tuple[Allocation, ...] = ()
    team: str | None = Field(default=None, description="The job's team (null when the workload names none).")
    solo_speedup: float | None = Field(
        default=None,
        description="Fairness objectives: the job's best speedup alone on the fleet under the same budgets and its "
        "own max_devices (the normaliser; null otherwise).",
    )


class TeamShare(_Frozen):
    """One team's part of a plan (docs/guides/fairness.md)."""

    team: str
    share: float = Field(description="The team's share of the fleet (the workload's teams, summing to 1).")
    jobs: int = Field(description="Jobs of the team; admitted ones hold devices.")
    devices: int = Field(description="Devices the team's admitted jobs hold.")
    device_share: float = Field(description="devices / devices the plan uses (0 when it uses none).")
    normalised_speedup: float | None = Field(
        default=None, description="Sum over the team's jobs of S_j / S_j^solo (fairness objectives only)."
    )


class DeviceUse(_Frozen):
    device: str
    model: str
    domain: str | None
    used: int
    idle: int
    power_w: float = Field(description="Caps of used devices plus idle draw of the others, in watts.")
    idle_w: float = Field(description="Echo of the idle draw used (from the workload or the catalog).")
    memory_gb: float | None
    power_levels: tuple[tuple[float, float], ...] = Field(description="Echo of the (cap_w, speed) levels used.")


class Suggestion(_Frozen):
    """One change a program can apply: set `target` (a JSON path into the workload) from `current` to `needed`."""

    kind: str = Field(
        description="raise_budget, extend_deadline, lower_priority, remove_job, lower_memory, lower_min_devices, "
        "add_allowed_model, plan_night (a fairness objective whose jobs do not all fit at once: the night planner "
        "shares the fleet over time; target empty)"
    )
    target: str = Field(description="JSON path of the workload field to change, e.g. power.domains.rack2")
    current: Any
    needed: Any
    message: str


class Plan(_Frozen):
    workload: str = Field(description="Name of the planned workload.")
    objective_name: str
    status: Status
    objective: float | None = Field(description="Exact objective recomputed from the placements.")
    bound: float | None = Field(description="Proven bound on the objective (upper for max, lower for min).")
    gap: float | None = Field(description="|bound - objective| / max(|objective|, 1e-9).")
    solve_seconds: float
    weighted_speedup: float = Field(description="Sum over admitted jobs of priority weight x weight x S.")
    power_w: float
    power_by_domain: dict[str, float] = Field(default_factory=dict)
    budget_w: float | None = Field(default=None, description="Echo of the global budget in force, in watts.")
    budget_by_domain: dict[str, float] = Field(default_factory=dict, description="Echo of the domain budgets.")
    placements: tuple[Placement, ...] = ()
    devices: tuple[DeviceUse, ...] = ()
    diagnosis: tuple[str, ...] = Field(default=(), description="Why there is no plan, in plain language.")
    suggestions: tuple[Suggestion, ...] = Field(
        default=(),
        description="The fewest and smallest changes after which there is one (optsched.explain.suggestions).",
    )
    warnings: tuple[str, ...] = ()
    rounds: int = Field(default=0, description="Cut-refinement rounds (MILP solves) used.")
    fairness: float | None = Field(
        default=None,
        description="Fairness objectives: max_min_speedup min_j S_j / (w_j S_j^solo), team_max_min min_T "
        "(sum_{j in T} S_j / S_j^solo) / share_T; the verifier recomputes it (null for the other objectives).",
    )
    teams: tuple[TeamShare, ...] = Field(default=(), description="Per team, when any job names a team.")
    timings: dict[str, float] = Field(
        default_factory=dict, description="Seconds per phase: validate, build, handoff, solve (highs inside), extract."
    )

    @property
    def feasible(self) -> bool:
        return self.status in FEASIBLE_STATUSES
