"""Request and response models at the HTTP edge; the documents inside them are optsched's own models. Each
resource kind's models (its resource, path, and for listed kinds its summary, list and query) are derived from its
`KindSpec` (optsched.service.kinds), named after it (`NightPlanResource`, `NightPlanStatus`, ...)."""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, ClassVar, cast

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, create_model

from optsched.infra.store import CURSOR_PATTERN, PlanRecord
from optsched.schema.plan import Plan
from optsched.schema.workload import Workload
from optsched.service.kinds import KINDS, KindSpec, statuses_of

# A query parameter that is a count: decimal digits only ("1.0", "1e1", " 1" are not counts).
_DIGITS = re.compile(r"[0-9]{1,9}")


def _count(value: Any) -> Any:
    if isinstance(value, str) and _DIGITS.fullmatch(value) is None:
        raise ValueError("must be a whole number written with digits only")
    return int(value) if isinstance(value, str) else value


QueryCount = Annotated[int, BeforeValidator(_count), Field(strict=True)]
_ID_DESCRIPTION = "id, as returned in `id` and `Location`."


class SubmitHeaders(BaseModel):
    prefer: str | None = Field(
        default=None, alias="Prefer", description="`respond-async` answers 202 at once instead of waiting."
    )
    idempotency_key: str | None = Field(
        default=None,
        alias="Idempotency-Key",
        min_length=1,
        max_length=255,
        description="A retried POST with the same key returns the same plan instead of solving twice.",
    )


class AsyncSubmitHeaders(BaseModel):
    idempotency_key: str | None = Field(
        default=None,
        alias="Idempotency-Key",
        min_length=1,
        max_length=255,
        description="A retried POST with the same key returns the same resource instead of solving twice.",
    )


class _Timestamps(BaseModel):
    id: str
    submitted_at: datetime
    started_at: datetime | None = Field(description="When a worker started the (last) solve.")
    finished_at: datetime | None
    error: str | None = Field(default=None, description="Why the solve failed or was stopped, when it was.")

    @staticmethod
    def fields_of(record: PlanRecord) -> dict[str, Any]:
        return {
            "id": record.id,
            "status": record.outcome,
            "submitted_at": record.submitted_at,
            "started_at": record.started_at,
            "finished_at": record.finished_at,
            "error": record.error,
        }


class Resource(_Timestamps):
    """What every resource model derives from: `of(record)` reads the record into the kind's model."""

    spec: ClassVar[KindSpec]

    @classmethod
    def of(cls, record: PlanRecord) -> Resource:
        spec = cls.spec
        fields = cls.fields_of(record)
        for name, (param, _description) in spec.param_fields.items():
            fields[name] = (record.params or {}).get(param, "")
        if spec.result_field in cls.model_fields:
            fields[spec.result_field] = spec.result.model_validate(record.result) if record.result is not None else None
        return cls(**fields)


def _status_enum(spec: KindSpec) -> type[StrEnum]:
    """The statuses a resource of this kind can show, as its own enum (so each resource documents its own)."""
    return cast(type[StrEnum], StrEnum(f"{spec.camel}Status", {s: s for s in statuses_of(spec)}, module=__name__))


def _resource_models(spec: KindSpec) -> tuple[type[Resource], type[Resource]]:
    """(resource, summary) models of a kind: the summary is the resource without its result (listings)."""
    status: Any = (_status_enum(spec), Field(description=spec.texts.status_description))
    params: dict[str, Any] = {name: (str, Field(description=d)) for name, (_, d) in spec.param_fields.items()}
    summary = create_model(
        f"{spec.camel}Summary", __base__=Resource, __module__=__name__, **params, status=status
    )
    result: Any = (spec.result | None, Field(default=None, description=spec.texts.result_description))
    resource = create_model(
        f"{spec.camel}Resource", __base__=Resource, __module__=__name__, __doc__=spec.texts.resource_description,
        **params, status=status, **{spec.result_field: result},
    )
    summary.spec = resource.spec = spec
    return resource, summary


def path_model(spec: KindSpec) -> type[BaseModel]:
    """The id in a kind's URLs."""
    fields: dict[str, Any] = {spec.id_param: (str, Field(description=f"{spec.noun.capitalize()} {_ID_DESCRIPTION}"))}
    return create_model(f"{spec.camel}Path", __module__=__name__, **fields)


def parent_path_model(spec: KindSpec) -> type[BaseModel]:
    """The parent's id in the URL that creates a resource of a kind with a parent."""
    parent = KINDS[spec.parent or ""]
    fields: dict[str, Any] = {parent.id_param: (str, Field(description=spec.texts.parent_description))}
    return create_model(f"{spec.camel}ParentPath", __module__=__name__, **fields)


def list_models(spec: KindSpec) -> tuple[type[BaseModel], type[BaseModel]]:
    """(query, page) of a listed kind's GET /v1/<collection>."""
    summary = summary_model(spec)
    status_type: Any = summary.model_fields["status"].annotation
    items: Any = list.__class_getitem__(summary)  # list[summary], with the model made at run time
    query = create_model(
        f"{spec.camel}ListQuery", __module__=__name__,
        limit=(QueryCount, Field(default=20, ge=1, le=100, description=f"{spec.noun.capitalize()}s per page.")),
        cursor=(
            str | None, Field(default=None, pattern=CURSOR_PATTERN, description="`next_cursor` of the previous page.")
        ),
        status=(status_type | None, Field(default=None, description=f"Only {spec.noun}s in this status.")),
    )
    page = create_model(
        f"{spec.camel}List", __module__=__name__,
        items=(items, Field(description=f"Newest first; fetch one by id for its {spec.noun}.")),
        next_cursor=(str | None, Field(description="Pass as `cursor` for the next page; null on the last page.")),
    )
    return query, page


# (resource, summary) models by kind name, made once per kind: the OpenAPI document names each model once.
_MODELS: dict[str, tuple[type[Resource], type[Resource]]] = {}


def resource_model(spec: KindSpec) -> type[Resource]:
    """The kind's resource: `<Camel>Resource`, the timestamps, its status and its result."""
    if spec.name not in _MODELS:
        _MODELS[spec.name] = _resource_models(spec)
    return _MODELS[spec.name][0]


def summary_model(spec: KindSpec) -> type[Resource]:
    """The kind's resource without its result (`<Camel>Summary`, in listings)."""
    resource_model(spec)
    return _MODELS[spec.name][1]


class VerifyRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    workload: Workload
    plan: Plan


class VerifyResult(BaseModel):
    violations: list[str] = Field(description="Every rule the plan breaks; empty when the plan is valid.")


class Health(BaseModel):
    status: str
    checks: dict[str, str] = Field(default_factory=dict)
