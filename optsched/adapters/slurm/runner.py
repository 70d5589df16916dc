"""The one way optsched talks to Slurm: its commands, run without a shell, with a timeout."""

from __future__ import annotations

import json
import logging
import os
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from optsched.schema.errors import OptschedError

log = logging.getLogger(__name__)


class SlurmError(OptschedError):
    """A Slurm command failed or could not be run; the message names the command and what Slurm said."""


class SlurmInputError(OptschedError, ValueError):
    """What Slurm reported cannot be planned as it is (an unknown GRES type, output of another Slurm version...);
    `problems` names every job or node at fault, and nothing was changed in Slurm."""

    def __init__(self, problems: Sequence[str]):
        self.problems = tuple(problems)
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(
            f"cannot use what Slurm reports ({len(self.problems)} problem(s)); nothing was changed:\n{lines}"
        )


@dataclass(frozen=True)
class SlurmRunner:
    """Runs `sinfo`, `squeue` and `scontrol` as found on PATH, with SLURM_CONF as the environment sets it
    (or `slurm_conf` when given), each within `timeout_s`."""

    slurm_conf: str | None = None
    timeout_s: float = 30.0
    env: Mapping[str, str] = field(default_factory=dict)

    def run(self, argv: Sequence[str]) -> str:
        """The command's standard output; SlurmError when it cannot run, times out or exits non-zero."""
        environment = {**os.environ, **self.env}
        if self.slurm_conf is not None:
            environment["SLURM_CONF"] = self.slurm_conf
        log.debug("running %s", shlex.join(argv))
        try:
            done = subprocess.run(
                list(argv), capture_output=True, text=True, timeout=self.timeout_s, env=environment, check=False
            )
        except FileNotFoundError as err:
            raise SlurmError(f"{argv[0]} not found on PATH: is Slurm installed here?") from err
        except subprocess.TimeoutExpired as err:
            raise SlurmError(f"{shlex.join(argv)} did not answer within {self.timeout_s:g} s") from err
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip() or f"exit status {done.returncode}"
            raise SlurmError(f"{shlex.join(argv)} failed: {said}")
        return done.stdout

    def json(self, argv: Sequence[str]) -> dict[str, Any]:
        text = self.run(argv)
        try:
            document = json.loads(text)
        except ValueError as err:
            raise SlurmInputError(
                [f"{shlex.join(argv)} printed no JSON ({err}); Slurm 22.05 or later is needed"]
            ) from err
        if not isinstance(document, dict):
            raise SlurmInputError([f"{shlex.join(argv)} printed JSON that is not an object"])
        return document
