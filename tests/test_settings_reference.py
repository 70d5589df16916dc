"""The configuration reference in the docs is the one generated from `Settings` and names every setting; only the
settings read OPTSCHED_* variables, and the solver-log setting reaches HiGHS."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from optsched.service.settings import PREFIX, Settings
from optsched.service.settings_reference import REFERENCE_PATH, render

ROOT = Path(__file__).resolve().parents[1]


def test_the_configuration_reference_is_current():
    assert (ROOT / REFERENCE_PATH).read_text() == render(), "run `make config-reference` and commit the file"


def test_every_setting_has_a_row_with_its_description_and_default():
    rows = {line.split("|")[1].strip().strip("`"): line for line in render().splitlines() if line.startswith("| `")}
    assert list(rows) == [PREFIX + name for name in Settings.model_fields]
    assert all(field.description for field in Settings.model_fields.values())
    assert "| `OPTSCHED_QUEUE_SIZE` | int (>= 1) | `64` |" in rows["OPTSCHED_QUEUE_SIZE"]
    assert "| `OPTSCHED_API_TOKEN` | str, optional | unset |" in rows["OPTSCHED_API_TOKEN"]


ENVIRONMENT_READERS = {"optsched/service/settings.py"}


def test_only_the_settings_read_optsched_variables_from_the_environment():
    readers = {
        str(path.relative_to(ROOT))
        for folder in ("optsched", "api")
        for path in (ROOT / folder).rglob("*.py")
        if re.search(r"(environ\.get|getenv|environ\[)\(?\s*[\"']OPTSCHED_", path.read_text())
    }
    assert readers <= ENVIRONMENT_READERS, readers - ENVIRONMENT_READERS


def test_the_solver_log_setting_reaches_highs_in_the_cli_process(tmp_path):
    # HiGHS writes its log to stdout itself: with OPTSCHED_HIGHS_LOG=1 the CLI's output carries HiGHS's banner,
    # without it only the plan's JSON.
    optsched_cli = Path(sys.executable).with_name("optsched")
    outputs = {}
    for flag in ("0", "1"):
        env = {**os.environ, "OPTSCHED_HIGHS_LOG": flag}
        run = subprocess.run([str(optsched_cli), "plan", str(ROOT / "models/workloads/tiny.json")],
                             env=env, capture_output=True, text=True, timeout=300, check=False)
        assert run.returncode == 0, run.stderr
        outputs[flag] = run.stdout
    assert "HiGHS" not in outputs["0"]
    assert "HiGHS" in outputs["1"]
