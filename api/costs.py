"""What one request may cost, from the server's OPTSCHED_MAX_* settings: the size of the documents it sends, the
solver time it may hold, and the charts drawn for it. Every limit is checked before anything is stored or drawn
and is published in the served OpenAPI document (`publish_limits`), so clients see the limits of this server.

- workloads, night queues and verified plans: jobs, devices, device groups, power levels per group,
  `options.time_limit_s` and placement variables (optsched.schema.limits.check_size; 422 naming the path);
- the worst-case solve time of a resource, time limit x the solves it may run (OPTSCHED_MAX_SOLVE_S; 422);
- night hours and frontier budgets (OPTSCHED_MAX_NIGHT_HOURS, OPTSCHED_MAX_BUDGETS; 422);
- charts: rows and bars (OPTSCHED_MAX_CHART_ROWS / _BARS): a larger chart is not drawn (409 saying so; the JSON
  document has every figure), so no drawing process (api/drawing.py) runs for long. Every chart function of every
  kind is in the size table (`_CHART_SIZES`; tests/hardening/test_charts.py checks it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import current_app

from api.errors import ApiProblem
from optsched.schema.limits import check_size
from optsched.schema.workload import Workload
from optsched.service.kinds import KINDS
from optsched.service.kinds import base as kinds
from optsched.service.settings import limits_of


def check_workload(workload: Workload, *, path: str = "", jobs: int | None = None) -> None:
    """422 (InvalidWorkload) when the workload is above one of this server's size limits."""
    check_size(workload, limits_of(current_app.config), path=path, jobs=jobs)


def check_at_most(value: float, setting: str, path: str, what: str) -> None:
    """422 at `path` when `value` is above the setting OPTSCHED_<setting>."""
    kinds.check_at_most(value, current_app.config, setting, path, what)


def check_chart(name: str, size: tuple[int, int] | None) -> None:
    """409 (the chart is not drawn) when it would have more rows or bars than this server draws, or its size is
    unknown (`chart_size`)."""
    if size is None:
        raise ApiProblem(409, f"{name} is not drawn: this server does not know its size (api/costs.py)")
    rows, bars = size
    max_rows, max_bars = current_app.config["MAX_CHART_ROWS"], current_app.config["MAX_CHART_BARS"]
    if rows > max_rows or bars > max_bars:
        raise ApiProblem(
            409,
            f"{name} is not drawn for this size ({rows:,} rows, {bars:,} bars; this server draws at most {max_rows:,} "
            f"rows and {max_bars:,} bars: OPTSCHED_MAX_CHART_ROWS/_BARS); the JSON resource holds every figure",
        )


def chart_size(draw: Callable[[Any], bytes], document: Any) -> tuple[int, int] | None:
    """(rows, bars) the chart `draw` would draw for `document`; None for a chart the size table lacks, which is
    not drawn (a kind that adds a chart adds its size here; tests/hardening/test_charts.py checks every registered
    chart is in it)."""
    size = _CHART_SIZES.get(getattr(draw, "__name__", ""))
    return None if size is None else size(document)


def _gantt_size(plan: Any) -> tuple[int, int]:
    rows = sum(u.count for u in plan.summary.device_utilisation)
    bars = sum(len(a.devices) for job in plan.jobs for seg in job.segments for a in seg.allocations)
    return rows, bars


def _power_size(plan: Any) -> tuple[int, int]:
    lines = 1 + len(plan.power.domains) + len(plan.summary.peak_power_by_domain)
    return lines, lines * len(plan.events)


def _placement_size(plan: Any) -> tuple[int, int]:
    return len(plan.placements), sum(len(p.allocations) for p in plan.placements)


def _frontier_size(frontier: Any) -> tuple[int, int]:
    return 1, len(frontier.points)


def _queueing_front_size(study: Any) -> tuple[int, int]:
    # Each point of the front carries its caps as a text label, as costly to draw as a row's name.
    return len(study.front), len(study.front) * max(1, len(study.classes))


# Chart functions by name (optsched.charts, optsched.explain.frontier) -> their size.
_CHART_SIZES: dict[str, Callable[[Any], tuple[int, int]]] = {
    "gantt_png": _gantt_size,
    "power_png": _power_size,
    "placement_png": _placement_size,
    "plot_frontier": _frontier_size,
    "queueing_front_png": _queueing_front_size,
}


# Where each limit shows in the OpenAPI document: (schema, property, keyword, setting); the kinds' own are added
# from their specs when the document is finished.
_PUBLISHED = (
    ("Workload", "jobs", "maxItems", "MAX_JOBS"),
    ("NightQueue", "jobs", "maxItems", "MAX_JOBS"),
    ("Workload", "devices", "maxItems", "MAX_DEVICE_GROUPS"),
    ("NightQueue", "devices", "maxItems", "MAX_DEVICE_GROUPS"),
    ("DeviceGroup", "power_levels", "maxItems", "MAX_LEVELS"),
    ("DeviceGroup", "count", "maximum", "MAX_DEVICES"),
    ("DeviceFailure", "count", "maximum", "MAX_DEVICES"),
    ("Options", "time_limit_s", "maximum", "MAX_TIME_LIMIT_S"),
    ("Plan", "placements", "maxItems", "MAX_JOBS"),
)


def publish_limits(spec: dict[str, Any], config: Any) -> None:
    """Write this server's limits into the request schemas of `spec` (in place), tightening what the models say."""
    schemas = spec.get("components", {}).get("schemas", {})
    kinds_own = ((x.model, x.field, x.keyword, x.setting) for spec in KINDS.values() for x in spec.limits)
    for schema, prop, keyword, setting in (*_PUBLISHED, *kinds_own):
        target = schemas.get(schema, {}).get("properties", {}).get(prop)
        if target is None:
            continue
        for node in (target, *target.get("anyOf", [])):
            kind = node.get("type")
            if (keyword == "maxItems" and kind == "array") or (keyword == "maximum" and kind in ("integer", "number")):
                value = int(config[setting]) if kind in ("array", "integer") else float(config[setting])
                node[keyword] = min(node.get(keyword, value), value)
