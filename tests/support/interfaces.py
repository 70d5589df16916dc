"""One mutated workload through the three interfaces: the Python API, the CLI and the REST API.

`check_everywhere` asserts the promise for one `Mutant` and returns what happened ("rejected" or the plan's
status). Rejected means: `optsched.InvalidWorkload` listing the changed path, `optsched plan` exiting 2 with
every problem on stderr and no traceback, and a 4xx problem+json from the service (422 listing the same paths
as the Python API, or 400 for JSON the parser refuses, or 413 for a body over the limit). Accepted means: a
plan the verifier passes, from the Python API and from the CLI (exit 0 or 1, no traceback), and a 202 from
the service.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

import optsched
from optsched.cli import app as cli_app
from optsched.schema.errors import InvalidWorkload
from optsched.schema.workload import MAX_LISTED_ERRORS
from tests.support.mutations import Mutant, reported

TRACEBACK = "Traceback (most recent call last)"
# Mutations a JSON parser may refuse before any field is looked at (then the problem is the whole document).
DOCUMENT_LEVEL = ("non-finite", "deep nesting")
runner = CliRunner()


def python_source(mutant: Mutant) -> Any:
    """Python data where json.loads can build it, else the JSON text (which optsched.plan also takes)."""
    try:
        return mutant.document()
    except RecursionError:
        return mutant.text


def check_everywhere(mutant: Mutant, client, folder: Path, *, time_limit_s: float = 5.0) -> str:
    # -- Python API ------------------------------------------------------------------------------------
    try:
        result = optsched.plan(python_source(mutant), time_limit_s=time_limit_s)
        errors = None
    except InvalidWorkload as exc:
        errors = exc.errors
    if mutant.must_reject:
        assert errors is not None, f"{mutant.kind} at {mutant.path} was accepted"
    if errors is not None:
        paths = [e.path for e in errors]
        assert errors and all(e.message for e in errors), errors
        assert len(errors) <= MAX_LISTED_ERRORS + 1, len(errors)
        document_level = mutant.kind in DOCUMENT_LEVEL and paths == [""]
        assert document_level or reported(mutant.path, paths), (mutant.kind, mutant.path, paths)
    else:
        assert optsched.verify(mutant.document(), result) == [], (mutant.kind, mutant.path)

    # -- CLI -------------------------------------------------------------------------------------------
    source, output = folder / "workload.json", folder / "plan.json"
    source.write_text(mutant.text, encoding="utf-8")
    output.unlink(missing_ok=True)
    run = runner.invoke(cli_app, ["plan", str(source), "-o", str(output), "--table", "--time-limit", str(time_limit_s)])
    assert TRACEBACK not in run.output and TRACEBACK not in run.stderr, run.stderr[-2000:]
    assert isinstance(run.exception, SystemExit) or run.exception is None, repr(run.exception)
    if errors is not None:
        assert run.exit_code == 2, (run.exit_code, run.stderr[-2000:])
        assert "invalid workload" in run.stderr
        if mutant.kind not in DOCUMENT_LEVEL:
            printed = _visible(run.stderr)
            assert all(_visible(p) in printed for p in paths if p), (paths, run.stderr[-2000:])
    else:
        assert run.exit_code in (0, 1), (run.exit_code, run.stderr[-2000:])
        assert optsched.verify(mutant.document(), json.loads(output.read_text())) == []

    # -- REST API ----------------------------------------------------------------------------------------
    response = client.post(
        "/v1/plans", data=mutant.text.encode(), content_type="application/json", headers={"Prefer": "respond-async"}
    )
    text = response.get_data(as_text=True)
    assert TRACEBACK not in text and 'File "/' not in text, text[:2000]
    if errors is not None:
        assert response.status_code in (400, 413, 422), (response.status_code, text[:2000])
        assert response.mimetype == "application/problem+json"
        body = response.get_json()
        assert body["status"] == response.status_code
        if response.status_code == 422:
            api_paths = [e["path"] for e in body["errors"]]
            if mutant.kind in DOCUMENT_LEVEL:
                assert api_paths == paths or reported(mutant.path, api_paths), (api_paths, paths)
            else:
                assert api_paths == paths, (api_paths, paths)
        return "rejected"
    assert response.status_code == 202, (response.status_code, text[:2000])
    return result.status.value


def _visible(text: str) -> str:
    """What a terminal shows, compared without layout: rich wraps long lines and drops control characters."""
    return "".join(ch for ch in text if ch.isprintable() and not ch.isspace())
