"""Run pytest beside CPU-bound processes: the suite must keep its word on a busy machine, not only an idle one.

    python -m tests.support.busy [--burners=N] PYTEST_ARGS...     # `make test-busy`

Starts N (default 2) processes that spin on a core each, runs `python -m pytest PYTEST_ARGS` and stops them,
whatever pytest's outcome; exits with pytest's status. On 2 cores this gives the load of 3-5 a user's machine
has with other work running: the bounds in tests/support/timing.py are meant to hold there.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time

SPIN = "while True: pass"


def run(pytest_args: list[str], burners: int = 2) -> int:
    """pytest's exit status, with `burners` spinning processes running the whole time."""
    spinning = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(burners)]
    started = time.monotonic()
    load_before = os.getloadavg()[0]
    try:
        status = subprocess.run([sys.executable, "-m", "pytest", *pytest_args], check=False).returncode
        # Read before the spinners are reaped, so that only pytest's processes are counted.
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        load_after = os.getloadavg()[0]
    finally:
        for process in spinning:
            process.kill()
        for process in spinning:
            process.wait()
    sys.stderr.write(
        f"busy: pytest exited {status} after {time.monotonic() - started:.0f} s beside {burners} spinning processes "
        f"(pytest's CPU time {usage.ru_utime + usage.ru_stime:.0f} s); 1-minute load average {load_before:.1f} at "
        f"the start, {load_after:.1f} at the end\n"
    )
    return status


def main(argv: list[str]) -> int:
    # Everything but a leading --burners=N is pytest's (argparse would take pytest's own options apart).
    if argv and argv[0].startswith("--burners="):
        return run(argv[1:], int(argv[0].removeprefix("--burners=")))
    return run(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
