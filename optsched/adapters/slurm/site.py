"""The site file: what Slurm does not say (GPU models of GRES types, power domains and budgets, priorities of
QOS and partitions, job profiles by name)."""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, model_validator

from optsched.schema.errors import FieldError, InvalidWorkload
from optsched.schema.workload import (
    Frozen,
    Hours,
    Id,
    NonNegativeFloat,
    Priority,
    StrictInt,
    Weight,
    _read_json,
    field_errors,
)

# GRES type (as gres.conf names it, lower case) -> catalog model; the site file's `types` adds to and overrides these.
DEFAULT_TYPES: Mapping[str, str] = {
    "h100": "H100-SXM",
    "a100": "A100-SXM",
    "v100": "V100-SXM2",
    "a40": "A40",
    "l4": "L4",
    "t4": "T4",
}


class Domain(Frozen):
    id: Id
    nodes: tuple[Id, ...] = Field(min_length=1)
    budget_w: NonNegativeFloat | None = None


class Profile(Frozen):
    """A job's Amdahl profile and what the planner may give it (the keys of the optsched comment)."""

    work_hours: Hours
    parallel_fraction: float = Field(ge=0, le=1)
    priority: Priority | None = None
    min_devices: StrictInt | None = Field(default=None, ge=1)
    max_devices: StrictInt | None = Field(default=None, ge=1)
    deadline_hours: Hours | None = None
    weight: Weight | None = None


class NamedProfile(Profile):
    pattern: str = Field(min_length=1, description="Job names it applies to (shell pattern, e.g. train-*).")


class Site(Frozen):
    types: dict[str, Id] = Field(default_factory=dict, description="GRES type -> catalog model (adds to the defaults).")
    budget_w: NonNegativeFloat | None = None
    domains: tuple[Domain, ...] = ()
    priorities: dict[str, Priority] = Field(default_factory=dict, description="QOS or partition -> priority.")
    profiles: tuple[NamedProfile, ...] = Field(default=(), description="Profiles by job name, first match wins.")
    teams: dict[str, Id] = Field(
        default_factory=dict,
        description="Slurm account -> the job's team (team_max_min shares between teams); an account not listed is "
        "a team of its own name.",
    )

    @model_validator(mode="after")
    def one_domain_per_node(self) -> Site:
        seen: dict[str, str] = {}
        for d in self.domains:
            for node in d.nodes:
                if node in seen:
                    raise ValueError(f"node {node!r} is in domains {seen[node]!r} and {d.id!r}")
                seen[node] = d.id
        return self

    def model_of(self, gres_type: str) -> str | None:
        return {**DEFAULT_TYPES, **{k.lower(): v for k, v in self.types.items()}}.get(gres_type.lower())

    def domain_of(self, node: str) -> str | None:
        return next((d.id for d in self.domains if node in d.nodes), None)

    def team_of(self, account: str) -> str | None:
        """The team of a job charged to `account`: the site's mapping, else the account's name (None: no account)."""
        return self.teams.get(account, account) if account else None

    def profile_for(self, job_name: str) -> Profile | None:
        return next((p for p in self.profiles if fnmatch.fnmatchcase(job_name, p.pattern)), None)

    @classmethod
    def load(cls, source: Site | Mapping[str, Any] | str | Path) -> Site:
        """A site from an object, a dict, a JSON file path or JSON text; InvalidWorkload lists every problem."""
        if isinstance(source, Site):
            return source
        if isinstance(source, (str, Path)):
            source = _read_json(source)
        try:
            return cls.model_validate(source)
        except ValidationError as err:
            raise InvalidWorkload(
                [FieldError(f"site: {e.path}" if e.path else "site", e.message) for e in field_errors(err)]
            ) from None
