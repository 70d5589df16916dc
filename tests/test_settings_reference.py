"""The configuration reference in the docs is the one generated from `Settings`, and names every setting."""

from __future__ import annotations

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
