"""Service settings, typed: defaults, overridden by OPTSCHED_* environment variables, overridden by
create_app(config). The REST app, `optsched worker`, `optsched batch` and `optsched serve` all read them here,
so none of them needs the web framework to know its configuration."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from optsched.infra.tables import DEFAULT_DATABASE_URL
from optsched.schema.limits import DEFAULT_MAX_VARIABLES, Limits
from optsched.solve.highs import SOLVER_LOG

PREFIX = "OPTSCHED_"


class Settings(BaseSettings):
    """Every setting, named as the app's config keys; the environment variable is OPTSCHED_<NAME>."""

    model_config = SettingsConfigDict(env_prefix=PREFIX, frozen=True, extra="ignore", env_ignore_empty=True)

    DATABASE_URL: str = Field(DEFAULT_DATABASE_URL, description="SQLAlchemy URL of the plan store.")
    API_TOKEN: str | None = Field(
        None,
        description="The bearer token of the team `default`: every /v1 route and page needs `Authorization: Bearer "
        "<token>` (at least 16 characters; the service refuses to start without a token unless OPTSCHED_AUTH=off).",
    )
    API_TOKENS: str | None = Field(
        None,
        description="Teams and their bearer tokens, `team-a:TOKEN,team-b:TOKEN` (team names: lower-case letters, "
        "digits, `_.-`); each team sees only its own resources (another team's id is a 404). Combines with "
        "OPTSCHED_API_TOKEN.",
    )
    AUTH: Literal["on", "off"] = Field(
        "on",
        description="`off` runs without authentication (every resource is the team `default`'s; a warning is "
        "logged at start); with `on` a service without a token of at least 16 characters refuses to start.",
    )
    AUTH_FAILURES_PER_S: float = Field(
        1.0, gt=0,
        description="Wrong tokens (bearer, login form, session cookie) one client address may send per second, "
        "on average; beyond its burst it gets 429 with Retry-After.",
    )
    AUTH_FAILURE_BURST: int = Field(
        10, ge=1, description="Wrong tokens one client address may send at once before the rate above applies.",
    )
    # Retention (docs/operations/reliability.md, "Retention"): results expire, teams have a quota.
    RESULT_TTL_S: float = Field(
        7 * 86_400.0, ge=0,
        description="Seconds a finished, cancelled or failed resource is kept after it ended; the sweep then "
        "deletes it (0: kept until deleted).",
    )
    TEAM_QUOTA_MB: float = Field(
        1_024.0, ge=0,
        description="Documents (inputs and results, as JSON) one team may store, in MB; a POST beyond it is 507 "
        "(0: no quota).",
    )
    RETENTION_SWEEP_S: float = Field(
        60.0, gt=0,
        description="Seconds between two retention sweeps of the REST service (`optsched worker` pools sweep at each "
        "housekeeping round, every OPTSCHED_LEASE_S / 3).",
    )
    MAX_BODY_MB: float = Field(10.0, ge=0, description="Largest request body accepted, in MB (413 above).")
    MAX_VARIABLES: int = Field(
        DEFAULT_MAX_VARIABLES, ge=1,
        description="Largest placement model a request may ask for: jobs x device groups x power levels (422 above).",
    )
    SYNC_WAIT_S: float = Field(
        2.0, ge=0, description="How long POST /v1/plans waits for the solve before answering 202."
    )
    SYNC_WAIT_SLOTS: int = Field(
        16, ge=1, description="POSTs that may wait for their solve at once; the others answer 202 at once."
    )
    WORKERS: int | None = Field(None, ge=1, description="Solver worker processes (default: one per core).")
    QUEUE_SIZE: int = Field(64, ge=1, description="Plans that may wait for a worker; beyond that POST answers 503.")
    MAX_SOLVES_PER_WORKER: int = Field(50, ge=1, description="Solves after which a worker process is replaced.")
    SOLVE_GRACE_S: float = Field(5.0, ge=0, description="Seconds past its time limit after which a solve is killed.")
    SOLVER_THREADS: int = Field(1, ge=1, description="HiGHS threads per solve.")
    START_WORKERS: bool = Field(True, description="Start the solver pool with the app (false: plans only queue).")
    # Scaled deployment (README: Scaled deployment): solves go to RQ workers (`optsched worker`).
    QUEUE_URL: str | None = Field(None, description="Redis URL: solve on RQ workers instead of the embedded pool.")
    QUEUE_NAME: str = Field("optsched", min_length=1, description="RQ queue name (API, workers and batch must agree).")
    LEASE_S: float = Field(
        15.0, gt=0, description="RQ workers: seconds without word after which a solving row is requeued."
    )
    # What one request may cost (README: Reliability and security, "Bounded cost"); each is also published in
    # the served OpenAPI document, so a generated client knows the limits of the server it talks to.
    MAX_JOBS: int = Field(5_000, ge=1, description="Jobs in one workload, night queue or verified plan (422 above).")
    MAX_DEVICES: int = Field(
        10_000, ge=1, description="Devices in one workload: the sum of the device groups' counts (422 above)."
    )
    MAX_DEVICE_GROUPS: int = Field(1_000, ge=1, description="Device groups in one workload (422 above).")
    MAX_LEVELS: int = Field(32, ge=1, le=64, description="Power levels of one device group (422 above).")
    MAX_NIGHT_HOURS: float = Field(168.0, gt=0, le=8_760, description="Longest night a request may plan, in hours.")
    MAX_BUDGETS: int = Field(50, ge=1, le=1_000, description="Budgets one frontier request may list.")
    MAX_TIME_LIMIT_S: float = Field(
        300.0, gt=0, le=86_400,
        description="Largest options.time_limit_s a request may ask for, in seconds (422 above).",
    )
    MAX_SOLVE_S: float = Field(
        3_600.0, gt=0,
        description="Worst-case solver time one request may hold a worker: time limit x solves it may run (422 above).",
    )
    # Queueing studies (docs/guides/queueing.md): what one study may ask, and what its exact engine may spend.
    QUEUEING_MAX_CLASSES: int = Field(16, ge=1, le=16, description="Classes in one queueing study (422 above).")
    QUEUEING_MAX_COMBINATIONS: int = Field(
        10_000, ge=1, le=10_000,
        description="Cap combinations one study may evaluate: power levels ^ classes without cap_w (422 above).",
    )
    QUEUEING_MAX_SIMULATION_WORK: int = Field(
        2_500_000_000, ge=1,
        description="A simulated study's work: replications x jobs x (servers + 230), every doubling included "
        "(about 5 min of one core; 422 when the first run is above it).",
    )
    QUEUEING_MAX_STATES: int = Field(
        50_000, ge=1,
        description="States of one exact Markov chain; a larger one is left to the approximation (labelled).",
    )
    QUEUEING_EXACT_S: float = Field(
        10.0, gt=0, le=600, description="Seconds the exact engine may spend on one cap combination's chains."
    )
    QUEUEING_EXACT_STUDY_S: float = Field(
        20.0, gt=0, le=600,
        description="Seconds of exact checks per study phase (the cap choice, then the front's points).",
    )
    MAX_CHART_ROWS: int = Field(400, ge=1, description="Rows (devices, jobs) a chart may draw; larger ones are 409.")
    MAX_CHART_BARS: int = Field(20_000, ge=1, description="Bars a chart may draw; larger ones are 409 (use the JSON).")
    MAX_RESULT_MB: float = Field(
        32.0, gt=0,
        description="Largest result document a solve may store, in MB of JSON; a larger one is not stored and the "
        "resource fails saying so.",
    )
    CHART_WORKERS: int = Field(
        2, ge=1, description="Charts drawn at once, each in a process of its own apart from the HTTP process."
    )
    CHART_TIMEOUT_S: float = Field(
        30.0, gt=0, description="Seconds one chart may take to draw; past it its process is killed (503)."
    )
    # The HTTP server (api/serve.py): request reading apart from the application threads.
    READ_TIMEOUT_S: float = Field(
        20.0, gt=0, description="Seconds a client has to send a whole request (408 after); also the idle keep-alive."
    )
    MAX_CONNECTIONS: int = Field(1_000, ge=1, description="Open client connections the server holds at once.")
    CANCEL_REPLAY_S: float = Field(
        30.0, ge=0, description="A DELETE this soon after a cancel answers 200 `cancelled` again instead of deleting.",
    )
    METRICS_TOKEN: str | None = Field(
        None, min_length=16,
        description="The bearer token GET /metrics needs (a scraper's own, at least 16 characters); unset: the API "
        "token, and none when the service runs without one.",
    )
    VIEWER_SESSION_S: int = Field(8 * 3600, ge=60, description="Lifetime of the viewer's login cookie, in seconds.")
    # Diagnostics and tests.
    HIGHS_LOG: bool = Field(
        False,
        description="Print HiGHS's own solver log on stdout (debugging only): the CLI and every solving worker set "
        "the logger `optsched.solve.highs.SOLVER_LOG` to DEBUG, which is how a Python caller turns it on too.",
    )
    TEST_KILL_AT: str | None = Field(
        None,
        description="Tests only (api/failpoints.py): kill the server at its Nth database commit or write "
        "(`commit:N`, `write:N`).",
    )


def apply_solver_log(settings: Mapping[str, Any]) -> None:
    """HiGHS's own log in this process as the settings (`load_settings`) say (optsched.solve.highs.SOLVER_LOG):
    called by the CLI and by every solving worker, since each process has its own logging."""
    SOLVER_LOG.setLevel(logging.DEBUG if settings["HIGHS_LOG"] else logging.INFO)


def given_in_environment(environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The settings set (non-empty) by OPTSCHED_* variables, as opposed to their defaults."""
    environ = os.environ if environ is None else environ
    return frozenset(name for name in Settings.model_fields if environ.get(PREFIX + name) not in (None, ""))


class ConfigError(ValueError):
    """A setting that does not parse; the message names the variable and what it must be."""


def load_settings(
    overrides: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Every setting: its default, else OPTSCHED_<KEY> from the environment, else the override."""
    environ = os.environ if environ is None else environ
    given = {name: environ[PREFIX + name] for name in given_in_environment(environ)}
    try:
        # Values come from `environ` only (init arguments), so a test's mapping is never mixed with os.environ.
        settings = Settings() if environ is os.environ else Settings.model_validate(given)
    except ValidationError as exc:
        error = exc.errors()[0]
        name = str(error["loc"][0]).upper() if error["loc"] else "?"
        raw = given.get(name, environ.get(PREFIX + name))
        raise ConfigError(f"{PREFIX}{name}={raw!r}: {error['msg']}") from None
    values = settings.model_dump()
    values.update(overrides or {})
    return values


def limits_of(settings: Mapping[str, Any]) -> Limits:
    """The size limits one request must stay within (its OPTSCHED_MAX_* settings)."""
    return Limits(
        jobs=settings["MAX_JOBS"],
        devices=settings["MAX_DEVICES"],
        device_groups=settings["MAX_DEVICE_GROUPS"],
        levels=settings["MAX_LEVELS"],
        time_limit_s=settings["MAX_TIME_LIMIT_S"],
        variables=settings["MAX_VARIABLES"],
    )
