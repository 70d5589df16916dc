"""The job comment convention: `optsched:work_hours=3,parallel_fraction=0.95[,priority=high,...]`.

Users write the profile keys; `optsched slurm apply` adds `powercap=W` (or `powercap=n1@W/n2@W` per node), which
the Prolog reads. Text before `optsched:` is the user's and stays as it is.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import ValidationError

from optsched.adapters.slurm.site import Profile

PREFIX = "optsched:"
PROFILE_KEYS = ("work_hours", "parallel_fraction", "priority", "min_devices", "max_devices", "deadline_hours", "weight")
INT_KEYS = frozenset({"min_devices", "max_devices"})
FLOAT_KEYS = frozenset({"work_hours", "parallel_fraction", "deadline_hours", "weight"})
CAP_KEY = "powercap"


def split_comment(comment: str) -> tuple[str, dict[str, str]]:
    """(the user's text before `optsched:`, the optsched keys in their order); ValueError for a malformed pair."""
    head, found, tail = comment.partition(PREFIX)
    if not found:
        return comment, {}
    keys: dict[str, str] = {}
    for pair in filter(None, (p.strip() for p in tail.strip().split(","))):
        key, eq, value = pair.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise ValueError(f"comment pair {pair!r} is not key=value")
        keys[key.strip()] = value.strip()
    return head, keys


def profile_from_comment(comment: str) -> Profile | None:
    """The profile the comment gives, None when it has no optsched part; ValueError naming the bad key or value."""
    _, keys = split_comment(comment)
    unknown = sorted(set(keys) - set(PROFILE_KEYS) - {CAP_KEY})
    if unknown:
        raise ValueError(f"unknown comment key(s) {unknown}; known: {', '.join(PROFILE_KEYS)}")
    if not keys.keys() & set(PROFILE_KEYS):
        return None
    values: dict[str, object] = {}
    for key in PROFILE_KEYS:
        if key not in keys:
            continue
        text = keys[key]
        try:
            values[key] = int(text) if key in INT_KEYS else float(text) if key in FLOAT_KEYS else text
        except ValueError:
            kind = "a whole number" if key in INT_KEYS else "a number"
            raise ValueError(f"comment key {key}={text!r} is not {kind}") from None
    try:
        return Profile.model_validate(values)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "profile"
        raise ValueError(f"comment key {where}: {first['msg']}") from None


def with_caps(comment: str, caps: Mapping[str, float]) -> str:
    """The comment with the planned caps (node -> W) as its `powercap` key, replacing an earlier one."""
    head, keys = split_comment(comment)
    watts = {node: round(cap) for node, cap in caps.items()}
    keys.pop(CAP_KEY, None)
    if len(set(watts.values())) == 1:
        keys[CAP_KEY] = str(next(iter(watts.values())))
    elif watts:
        keys[CAP_KEY] = "/".join(f"{node}@{w}" for node, w in sorted(watts.items()))
    return head + PREFIX + ",".join(f"{k}={v}" for k, v in keys.items())
