"""Stand-in solve functions for the worker pool tests (importable by the spawned worker processes)."""

from __future__ import annotations

import os
import time
from typing import Any

from optsched.infra.pool import SolveTask


def sleep_forever(task: SolveTask) -> tuple[str, Any]:
    """A solve that never returns: the pool must kill it after its time limit plus grace."""
    time.sleep(3600)
    return "error", "unreachable"


def crash(task: SolveTask) -> tuple[str, Any]:
    """A solve that takes its worker process down (think of an out-of-memory kill)."""
    os._exit(3)
