"""What a resource kind is: `KindSpec`, the one place that declares a kind's request, result, solve function, time
budget, verdicts, charts, page and limits. The registry (`optsched.service.kinds.KINDS`) holds one per module of
this package; the REST face derives its routes from it, the queues' `Runner` looks kinds up in it by name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from optsched.infra.queue import SolveTask
from optsched.infra.store import PlanRecord
from optsched.schema.errors import FieldError, InvalidWorkload, OptschedError
from optsched.schema.workload import Options

Document = dict[str, Any]
# A kind's solve: the task in, its result (an instance of the kind's result model) out; it runs in a worker process.
Solve = Callable[[SolveTask], BaseModel]
# A kind's wall-time bound in seconds, from its input document and parameters (see `KindSpec.budget_s`).
Budget = Callable[[Document, Document], float]


class Conflict(OptschedError):
    """The request does not fit the state of the resource it starts from (a re-plan of a plan without one)."""


@dataclass(frozen=True)
class Submission:
    """What a valid request stores: the input document the solve reads and the solve's keyword arguments."""

    document: Any
    params: Document = field(default_factory=dict)


# Checks a parsed request (`body`), its raw JSON, the server's settings and, for a kind with a parent, the parent's
# record; raises InvalidWorkload (422) or Conflict (409), else returns what to store.
Prepare = Callable[[Any, Any, Mapping[str, Any], PlanRecord | None], Submission]
# Counts the raw JSON of a request (parsed JSON, not yet the request model) against the server's settings; raises
# InvalidWorkload (422) when counting alone shows it too large, so the model never validates a huge list.
Precount = Callable[[Any, Mapping[str, Any]], None]


def _nothing_missing(result: Any) -> str | None:
    return None


@dataclass(frozen=True)
class Chart:
    """A PNG a finished resource offers at `<its URL>/<file>`: `draw(result model)`, and `missing(result)` saying
    why a result has nothing to draw (None: it has); `operation` names its OpenAPI operation (get<Kind><operation>)."""

    file: str
    draw: Callable[[Any], bytes]
    operation: str
    summary: str
    description: str
    what: str  # the 200 answer's description
    missing: Callable[[Any], str | None] = _nothing_missing


@dataclass(frozen=True)
class PublishedLimit:
    """A server setting that tightens a request field in the served OpenAPI document (`keyword` is maxItems or
    maximum); the view's check of the same setting is in the kind's `prepare`."""

    model: str
    field: str
    keyword: str
    setting: str


@dataclass(frozen=True)
class Texts:
    """What the OpenAPI document and the problem documents say about a kind."""

    tag: str
    tag_description: str
    submit_summary: str
    submit_description: str
    invalid: str  # what a 422 rejected
    get_description: str
    delete_description: str
    resource_description: str
    status_description: str
    result_description: str
    submit_problems: Mapping[int, str] = field(default_factory=dict)  # further answers of the POST
    parent_description: str = ""  # the parent's id in the POST's URL, for a kind with a parent


@dataclass(frozen=True)
class KindSpec:
    """One resource kind, declared once.

    - `name` is stored in the job table's `kind` column; `noun` is how messages name it; `collection` its URL
      (`/v1/<collection>/<id>`), `camel` its names in the OpenAPI document (`create<camel>`, `<camel>Resource`),
      `id_param` the name of the id in its URLs;
    - `request` is the POST body's model (parsed, then checked by `prepare`), `result` the result document's model,
      shown in the resource's field `result_field`;
    - `solve` runs in a worker and returns the result; `verdict(result)` is the kind's word on it (its final
      status: optimal, met, done, ...), one of `verdicts`; `budget_s(document, params)` bounds its wall time (the
      solve is killed past it plus the grace period);
    - `charts` are the PNGs it offers, `page` the viewer's template (None: the viewer links to its JSON);
    - `parent`: the kind whose finished resource a POST starts from (`/v1/<parent>/<id>/<collection>`), if any;
      `sync`: the POST waits up to OPTSCHED_SYNC_WAIT_S for the solve (201) and honours `Prefer: respond-async`;
      `listed`: `GET /v1/<collection>` lists them; `limits`: the settings published on its request's fields;
    - `precount(raw, settings)`, if given, runs on the POST's JSON before the request model parses it: counting
      only, so a request too large by count costs no validation (a re-plan adding 40,000 jobs).
    """

    name: str
    noun: str
    collection: str
    camel: str
    id_param: str
    request: type[BaseModel]
    result: type[BaseModel]
    result_field: str
    solve: Solve
    verdict: Callable[[Any], str]
    verdicts: tuple[str, ...]
    budget_s: Budget
    prepare: Prepare
    texts: Texts
    page: str | None
    charts: tuple[Chart, ...] = ()
    parent: str | None = None
    sync: bool = False
    listed: bool = False
    limits: tuple[PublishedLimit, ...] = ()
    precount: Precount | None = None
    # Resource fields read from the stored parameters (name -> (parameter, description)): a re-plan's parent.
    param_fields: Mapping[str, tuple[str, str]] = field(default_factory=dict)

    def location(self, resource_id: str) -> str:
        return f"/v1/{self.collection}/{resource_id}"


def time_limit_s(workload: Any) -> float:
    """The workload's own time limit (what the planner uses), without validating the whole workload again."""
    try:
        return float((workload or {}).get("options", {}).get("time_limit_s", Options().time_limit_s))
    except (AttributeError, TypeError, ValueError):
        return Options().time_limit_s


def check_at_most(value: float, settings: Mapping[str, Any], setting: str, path: str, what: str) -> None:
    """InvalidWorkload at `path` when `value` is above the setting OPTSCHED_<setting>."""
    limit = settings[setting]
    if value > limit:
        message = f"{value:,g} {what}, above the limit of {limit:,g} (OPTSCHED_{setting})"
        raise InvalidWorkload([FieldError(path, message)])


def check_solve_budget(
    spec: KindSpec, document: Any, params: Document, max_solve_s: float, *, path: str = "", field: str | None = None
) -> None:
    """InvalidWorkload unless the resource's worst-case solve time (its kind's budget: time limit x the solves it
    may run, or a night's planning budget) is at most `max_solve_s`: what one request may hold a solver process
    for. The error names `field` (a request field bounding that time), else the document's options.time_limit_s."""
    budget = spec.budget_s(document, params)
    if budget <= max_solve_s:
        return
    knob = "options.time_limit_s" if field is None else field
    where = f"{path}.{knob}" if path and field is None else knob
    raise InvalidWorkload([FieldError(
        where,
        f"this {spec.name} may hold a solver for up to {budget:,.0f} s (its time limits and the solves it may run), "
        f"above the limit of {max_solve_s:,.0f} s (OPTSCHED_MAX_SOLVE_S); lower {knob} or split the work",
    )])


def under(path: str, errors: list[FieldError], keep: tuple[str, ...] = ()) -> list[FieldError]:
    """The errors with their paths moved under `path` (the request field holding the document), except those
    whose first segment is one of `keep` (the request's own arguments)."""
    def moved(e: FieldError) -> FieldError:
        if e.path.split(".")[0].split("[")[0] in keep:
            return e
        return FieldError(f"{path}.{e.path}" if e.path else path, e.message)

    return [moved(e) for e in errors]
