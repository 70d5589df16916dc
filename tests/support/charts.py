"""A stand-in chart for the drawing processes' tests (tests/hardening/test_charts.py): stdlib only, so that a
drawing process imports it at once."""

from __future__ import annotations

import os
import time


def slow_png(document: dict) -> bytes:
    """A "chart" that takes `seconds` to draw; each drawing appends `<name> <pid>` to the file `log`."""
    with open(document["log"], "a") as log:
        log.write(f"{document['name']} {os.getpid()}\n")
    time.sleep(document["seconds"])
    return b"\x89PNG" + document["name"].encode()


def drawn(log: str) -> list[tuple[str, int]]:
    """(name, pid) of each drawing, in order."""
    with open(log) as f:
        return [(name, int(pid)) for name, pid in (line.split() for line in f)]
