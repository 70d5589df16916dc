"""The configuration reference in the docs is the one generated from `Settings`, and names every setting."""

from __future__ import annotations

import re
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


# Who else reads OPTSCHED_* variables from the environment: the solver log switch, read in every solving process
# until SolveOptions carries it down (optsched/solve).
ENVIRONMENT_READERS = {
    "optsched/service/settings.py",
    "optsched/solve/highs.py",
    "optsched/solve/pyomo_backend.py",
}


def test_only_the_settings_read_optsched_variables_from_the_environment():
    readers = {
        str(path.relative_to(ROOT))
        for folder in ("optsched", "api")
        for path in (ROOT / folder).rglob("*.py")
        if re.search(r"(environ\.get|getenv|environ\[)\(?\s*[\"']OPTSCHED_", path.read_text())
    }
    assert readers <= ENVIRONMENT_READERS, readers - ENVIRONMENT_READERS
