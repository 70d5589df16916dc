"""A plain `pip install .` (no extras, not editable) imports every module it installed and ships the catalogs.

The test harness (tests/support) needs the `dev` extra; what stays installed must not, so a user without the extra
can import all of it. The build must not warn about the project's own configuration either.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
# Build output and local state that a copy of the source must leave behind.
NOT_SOURCE = shutil.ignore_patterns(
    ".venv", ".git", "build", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis", "var", "plans",
    ".schemathesis",
)
WARNINGS = ("BuildBackendWarning", "SetuptoolsDeprecationWarning")

# Run inside the fresh environment: import every module of the installed packages, load the device catalog.
# Not imported: `__main__` modules (importing one runs it) and Alembic's env.py, which Alembic runs in its own context.
IMPORT_ALL = """
import importlib, json, pkgutil, traceback
import api, optsched
failed, imported = {}, []
for package in (optsched, api):
    for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if module.name.endswith(".__main__") or module.name == "optsched.infra.migrations.env":
            continue
        try:
            importlib.import_module(module.name)
            imported.append(module.name)
        except BaseException:
            failed[module.name] = traceback.format_exc(limit=3)
from optsched.schema.catalog import device_catalog, sample_workload_path
print(json.dumps({"failed": failed, "imported": imported, "devices": len(device_catalog()),
                  "demo": sample_workload_path("demo").is_file(), "from": optsched.__file__}))
"""


def test_a_plain_install_imports_every_module_and_builds_without_warnings(tmp_path):
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCE)
    env_dir = tmp_path / "env"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    # -v: pip passes the build backend's output through only when verbose.
    install = subprocess.run([python, "-m", "pip", "install", "-v", str(source)], capture_output=True, text=True,
                             timeout=900, check=False)
    output = install.stdout + install.stderr
    assert install.returncode == 0, output[-4000:]
    warned = [line for line in output.splitlines() if any(w in line for w in WARNINGS)]
    assert warned == [], "\n".join(warned)

    # Run from the temporary folder so that the installed packages, not the checkout's, are imported.
    run = subprocess.run([python, "-c", IMPORT_ALL], capture_output=True, text=True, cwd=tmp_path, timeout=600,
                         check=False)
    assert run.returncode == 0, run.stderr[-4000:]
    report = json.loads(run.stdout.splitlines()[-1])
    assert report["failed"] == {}, "\n".join(report["failed"].values())
    assert str(env_dir) in report["from"]
    assert "optsched.testing.instances" in report["imported"]
    assert not any(name.startswith(("optsched.testing.server", "api.testing")) for name in report["imported"])
    assert report["devices"] > 0 and report["demo"]

