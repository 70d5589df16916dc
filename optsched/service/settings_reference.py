"""The configuration reference, generated from `Settings`: every OPTSCHED_* variable with its type, default and
description, as Markdown. `make config-reference` writes it to docs/operations/configuration.md (a test checks that
the file is current): `python -m optsched.service.settings_reference [FILE]` (stdout without FILE)."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic.fields import FieldInfo

from optsched.service.settings import PREFIX, Settings

REFERENCE_PATH = Path("docs/operations/configuration.md")
HEADER = """# Configuration reference

<!-- Generated from optsched/service/settings.py by `make config-reference`; do not edit by hand. -->

The REST service, `optsched worker`, `optsched batch` and `optsched serve` read these environment variables (an
empty value counts as unset); `create_app(config)` overrides them by name without the prefix. A value that does
not parse stops the process at start with a message naming the variable.

| variable | type | default | description |
|---|---|---|---|
"""
_BOUNDS: tuple[tuple[type[Any], str, str], ...] = (
    (annotated_types.Ge, "ge", ">="),
    (annotated_types.Gt, "gt", ">"),
    (annotated_types.Le, "le", "<="),
    (annotated_types.Lt, "lt", "<"),
    (annotated_types.MinLen, "min_length", "length >="),
)


def render() -> str:
    """The reference as Markdown: one row per field of `Settings`, in declaration order."""
    rows = [_row(name, field) for name, field in Settings.model_fields.items()]
    return HEADER + "".join(rows)


def _row(name: str, field: FieldInfo) -> str:
    default = "unset" if field.default is None else f"`{_text(field.default)}`"
    description = (field.description or "").replace("|", "\\|")
    return f"| `{PREFIX}{name}` | {_type(field)} | {default} | {description} |\n"


def _type(field: FieldInfo) -> str:
    annotation = field.annotation
    optional = get_origin(annotation) in (Union, types.UnionType) and type(None) in get_args(annotation)
    base = next((a for a in get_args(annotation) if a is not type(None)), annotation) if optional else annotation
    if get_origin(base) is Literal:
        text = "one of " + ", ".join(f"`{value}`" for value in get_args(base))
    else:
        text = getattr(base, "__name__", str(base))
    bounds = [
        f"{symbol} {_text(getattr(item, attribute))}"
        for item in field.metadata
        for kind, attribute, symbol in _BOUNDS
        if isinstance(item, kind)
    ]
    return text + (f" ({', '.join(bounds)})" if bounds else "") + (", optional" if optional else "")


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return repr(value).removesuffix(".0")
    return str(value)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args:
        Path(args[0]).parent.mkdir(parents=True, exist_ok=True)
        Path(args[0]).write_text(render())
    else:
        sys.stdout.write(render())


if __name__ == "__main__":
    main()
