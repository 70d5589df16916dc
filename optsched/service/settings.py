"""Service settings: defaults, overridden by OPTSCHED_* environment variables, overridden by create_app(config)."""

from __future__ import annotations

import os
from typing import Any, Callable, Mapping

from optsched.schema.limits import DEFAULT_MAX_VARIABLES
from optsched.infra.store import DEFAULT_DATABASE_URL


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError("must be at least 1")
    return value


def _non_negative_float(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise ValueError("must be a number >= 0")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise ValueError("must be a number > 0")
    return value


def _boolean(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError("must be true or false")


def _optional_text(text: str) -> str | None:
    return text or None


# key -> (default, parser of the OPTSCHED_<key> environment variable, one-line description for the docs)
SETTINGS: dict[str, tuple[Any, Callable[[str], Any], str]] = {
    "DATABASE_URL": (DEFAULT_DATABASE_URL, str, "SQLAlchemy URL of the plan store."),
    "API_TOKEN": (None, _optional_text, "When set, every /v1 route needs `Authorization: Bearer <token>`."),
    "MAX_BODY_MB": (10.0, _non_negative_float, "Largest request body accepted, in MB (413 above)."),
    "MAX_VARIABLES": (
        DEFAULT_MAX_VARIABLES,
        _positive_int,
        "Largest placement model a request may ask for: jobs x device groups x power levels (422 above).",
    ),
    "SYNC_WAIT_S": (2.0, _non_negative_float, "How long POST /v1/plans waits for the solve before answering 202."),
    "SYNC_WAIT_SLOTS": (16, _positive_int, "POSTs that may wait for their solve at once; the others answer 202 at once."),
    "WORKERS": (None, _positive_int, "Solver worker processes (default: one per core)."),
    "QUEUE_SIZE": (64, _positive_int, "Plans that may wait for a worker; beyond that POST answers 503."),
    "MAX_SOLVES_PER_WORKER": (50, _positive_int, "Solves after which a worker process is replaced."),
    "SOLVE_GRACE_S": (5.0, _non_negative_float, "Seconds past its time limit after which a solve is killed."),
    "SOLVER_THREADS": (1, _positive_int, "HiGHS threads per solve."),
    "START_WORKERS": (True, _boolean, "Start the solver pool with the app (false: plans only queue)."),
    # Scaled deployment (README: Scaled deployment): solves go to RQ workers (`optsched worker`) instead of the embedded pool.
    "QUEUE_URL": (None, _optional_text, "Redis URL: solve on RQ workers instead of the embedded pool."),
    "QUEUE_NAME": ("optsched", str, "RQ queue name (API, workers and batch must agree)."),
    "LEASE_S": (15.0, _positive_float, "RQ workers: seconds without word after which a solving row is requeued."),
}


class ConfigError(ValueError):
    """A setting that does not parse; the message names the variable and what it must be."""


def load_settings(overrides: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None) -> dict:
    """Every setting: its default, else OPTSCHED_<KEY> from the environment, else the override."""
    environ = os.environ if environ is None else environ
    settings: dict[str, Any] = {}
    for key, (default, parse, _) in SETTINGS.items():
        raw = environ.get(f"OPTSCHED_{key}")
        if raw is None or raw == "":
            settings[key] = default
            continue
        try:
            settings[key] = parse(raw)
        except ValueError as exc:
            raise ConfigError(f"OPTSCHED_{key}={raw!r}: {exc}") from None
    settings.update(overrides or {})
    return settings
