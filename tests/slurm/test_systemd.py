"""The night's systemd timer and service, as operators install them, pass `systemd-analyze verify`."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

UNITS = Path(__file__).parents[2] / "deploy" / "systemd"


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed here")
def test_timer_and_service_verify():
    units = [UNITS / "optsched-night.service", UNITS / "optsched-night.timer"]
    done = subprocess.run(["systemd-analyze", "verify", *map(str, units)], capture_output=True, text=True, timeout=60)
    problems = [line for line in (done.stdout + done.stderr).splitlines() if "optsched-night" in line]
    assert done.returncode == 0 and problems == [], done.stdout + done.stderr
