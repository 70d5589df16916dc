"""Teams: who a request is, from its bearer token, and what each team may hold.

`OPTSCHED_API_TOKENS="team-a:TOKEN,team-b:TOKEN"` names the teams and their tokens; the single `OPTSCHED_API_TOKEN`
stays and is the team `default` (both may be set). Every stored resource belongs to the team that created it
(optsched.infra.store, the `team` column) and every read, list, chart, page, delete and idempotency key is scoped
to it. A service refuses to start without a token, or with one shorter than MIN_TOKEN_CHARS, unless
`OPTSCHED_AUTH=off` says so explicitly: then everything is the `default` team's and a warning is logged at start.

What a team may hold (`Admission`, checked in the transaction that stores a resource):
- with two teams or more, its share of the solve queue: QUEUE_SIZE // teams resources waiting or solving (at
  least one), so the shares add up to at most the queue and a team within its share always gets in however much
  the others hold (`TeamQueueFull`, a 429, past it); a lone team has the whole queue (503 when it is full);
- its storage quota: OPTSCHED_TEAM_QUOTA_MB of documents (inputs and results), `QuotaExceeded` (a 507) once it is
  used up, until the retention sweep (optsched.infra.retention) or the team's DELETEs free room.
"""

from __future__ import annotations

import hmac
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from optsched.infra.store import DEFAULT_TEAM, Usage
from optsched.infra.tables import TEAM_LENGTH
from optsched.schema.errors import OptschedError
from optsched.service.settings import ConfigError

log = logging.getLogger(__name__)

MIN_TOKEN_CHARS = 16
TEAM_PATTERN = re.compile(rf"[a-z0-9][a-z0-9_.-]{{0,{TEAM_LENGTH - 1}}}")
# Seconds a team over its queue share is told to wait: its own solves end one by one, each within seconds to minutes.
TEAM_RETRY_AFTER_S = 10
# Retry-After of a team over its quota when no result of its will expire (no time-to-live): a day.
QUOTA_RETRY_AFTER_S = 86_400


class TeamQueueFull(OptschedError):
    """The team holds its whole share of the solve queue; retry after `retry_after_s` seconds (others still get in)."""

    def __init__(self, team: str, share: int, retry_after_s: int = TEAM_RETRY_AFTER_S):
        self.team = team
        self.share = share
        self.retry_after_s = retry_after_s
        super().__init__(
            f"team {team!r} has {share} resource(s) queued or solving, its whole share of the solve queue; "
            f"retry in {retry_after_s} s, once one of them is done"
        )


class QuotaExceeded(OptschedError):
    """The team's stored documents fill its quota; delete results (or wait for them to expire) to store more."""

    def __init__(self, team: str, used_bytes: int, quota_bytes: int, retry_after_s: int):
        self.team = team
        self.retry_after_s = retry_after_s
        super().__init__(
            f"team {team!r} stores {used_bytes / 2**20:,.1f} MB, its quota is {quota_bytes / 2**20:,.1f} MB "
            f"(OPTSCHED_TEAM_QUOTA_MB); delete finished resources, or retry in {retry_after_s} s when the oldest "
            "expires"
        )


@dataclass(frozen=True)
class Tenants:
    """The teams a service knows and their tokens; `enabled` False when OPTSCHED_AUTH=off (one team, no token)."""

    tokens: tuple[tuple[str, str], ...]  # (team, token), in the order configured

    @property
    def enabled(self) -> bool:
        return bool(self.tokens)

    @property
    def teams(self) -> tuple[str, ...]:
        return tuple(team for team, _ in self.tokens) or (DEFAULT_TEAM,)

    def team_of(self, given: str) -> str | None:
        """The team whose token `given` is, or None. Every token is compared, each in constant time, so the time
        says nothing about which token (or how much of one) matched."""
        found = None
        for team, token in self.tokens:
            if hmac.compare_digest(given.encode(), token.encode()):
                found = team
        return found

    def token_of(self, team: str) -> str | None:
        return next((token for t, token in self.tokens if t == team), None)

    def queue_share(self, queue_size: int) -> int | None:
        """Resources one team may have queued or solving at once (None: a lone team, bounded by the queue alone)."""
        if len(self.teams) < 2:
            return None
        return max(1, queue_size // len(self.teams))


def tenants_of(settings: Mapping[str, Any]) -> Tenants:
    """The teams of these settings (API_TOKEN, API_TOKENS, AUTH), checked: ConfigError names the variable that is
    wrong and never echoes a token."""
    auth = settings.get("AUTH", "on")
    pairs: list[tuple[str, str]] = []
    single = settings.get("API_TOKEN")
    if single is not None:
        pairs.append((DEFAULT_TEAM, single))
    many = settings.get("API_TOKENS")
    if many is not None:
        pairs += _parse_tokens(many)
    if auth == "off":
        if pairs:
            raise ConfigError("OPTSCHED_AUTH=off with OPTSCHED_API_TOKEN or OPTSCHED_API_TOKENS set: unset the "
                              "tokens to run without authentication, or OPTSCHED_AUTH to use them")
        return Tenants(())
    if not pairs:
        raise ConfigError("no OPTSCHED_API_TOKEN or OPTSCHED_API_TOKENS: set one (a random string of at least "
                          f"{MIN_TOKEN_CHARS} characters), or OPTSCHED_AUTH=off to run without authentication")
    for team, token in pairs:
        where = "OPTSCHED_API_TOKEN" if team == DEFAULT_TEAM and token == single else f"OPTSCHED_API_TOKENS ({team})"
        if len(token) < MIN_TOKEN_CHARS or not token.isprintable() or token != token.strip():
            raise ConfigError(f"{where}: a token has at least {MIN_TOKEN_CHARS} printable characters and no spaces "
                              "around it (this one has not; the value is not shown)")
    teams = [team for team, _ in pairs]
    if len(set(teams)) != len(teams):
        raise ConfigError("OPTSCHED_API_TOKENS: a team is named twice (OPTSCHED_API_TOKEN is the team "
                          f"{DEFAULT_TEAM!r})")
    if len({token for _, token in pairs}) != len(pairs):
        raise ConfigError("OPTSCHED_API_TOKENS: two teams share a token; each team needs its own")
    return Tenants(tuple(pairs))


def _parse_tokens(text: str) -> list[tuple[str, str]]:
    pairs = []
    for position, item in enumerate(text.split(","), start=1):
        team, sep, token = item.strip().partition(":")
        if not sep or TEAM_PATTERN.fullmatch(team) is None:
            raise ConfigError(
                f"OPTSCHED_API_TOKENS: item {position} is not `team:token` with a team name of lower-case letters, "
                f"digits, '_', '.' or '-' (at most {TEAM_LENGTH} characters, starting with a letter or digit)"
            )
        pairs.append((team, token))
    return pairs


def log_authentication(tenants: Tenants) -> None:
    """At start: a warning when authentication is off; else the teams (never their tokens)."""
    if not tenants.enabled:
        log.warning("authentication is off (OPTSCHED_AUTH=off): anyone who reaches this service can read, submit "
                    "and delete every resource")
    else:
        log.info("authentication on: %d team(s): %s", len(tenants.tokens), ", ".join(tenants.teams))


@dataclass(frozen=True)
class Admission:
    """What one team may hold: `share` resources queued or solving (None: no share), `quota_bytes` of documents
    (None: no quota); `ttl_s` (None: results are kept) only says when the oldest result frees room."""

    share: int | None
    quota_bytes: int | None
    ttl_s: float | None

    @classmethod
    def of(cls, settings: Mapping[str, Any], tenants: Tenants) -> Admission:
        quota = settings["TEAM_QUOTA_MB"]
        ttl = settings["RESULT_TTL_S"]
        return cls(share=tenants.queue_share(settings["QUEUE_SIZE"]),
                   quota_bytes=int(quota * 2**20) if quota else None, ttl_s=float(ttl) if ttl else None)

    def judge(self, team: str, usage: Usage) -> None:
        """TeamQueueFull or QuotaExceeded when a team holding `usage` may store no more. PlanStore.create calls it
        (`admit`) in the insert's transaction, under the team's lock, so that the check and the insert are one."""
        if self.share is not None and usage.unfinished >= self.share:
            raise TeamQueueFull(team, self.share)
        if self.quota_bytes is not None and usage.stored_bytes >= self.quota_bytes:
            retry = QUOTA_RETRY_AFTER_S
            if self.ttl_s is not None and usage.oldest_finished_at is not None:
                expires = usage.oldest_finished_at + timedelta(seconds=self.ttl_s)
                retry = max(1, min(retry, int((expires - datetime.now(UTC)).total_seconds()) + 1))
            raise QuotaExceeded(team, usage.stored_bytes, self.quota_bytes, retry)
