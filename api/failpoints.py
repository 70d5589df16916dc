"""`optsched serve` with a failpoint: the server SIGKILLs its own process group in the middle of a database write.

    python -m api.failpoints --port P --workers W --threads T

OPTSCHED_TEST_KILL_AT=commit:N kills at the Nth transaction commit of the HTTP worker, after the transaction's
statements ran and before SQLite commits them; write:N kills right after the Nth INSERT/UPDATE/DELETE ran,
mid-transaction. Unset, this is plain `optsched serve`. The hooks are SQLAlchemy events on every Engine,
installed before the supervisor forks the HTTP process, so the store's own code runs unchanged.
"""

from __future__ import annotations

import argparse
import os
import signal

from sqlalchemy import event
from sqlalchemy.engine import Engine

from optsched.service.settings import load_settings

WRITES = ("INSERT", "UPDATE", "DELETE")


def install(spec: str) -> None:
    mode, _, count = spec.partition(":")
    target = int(count)
    seen = {"n": 0}

    def hit() -> None:
        seen["n"] += 1
        if seen["n"] >= target:
            os.killpg(os.getpgrp(), signal.SIGKILL)

    if mode == "commit":
        event.listen(Engine, "commit", lambda conn: hit())
    elif mode == "write":

        def after_execute(conn, cursor, statement, parameters, context, executemany):
            if statement.lstrip().upper().startswith(WRITES):
                hit()

        event.listen(Engine, "after_cursor_execute", after_execute)
    else:
        raise SystemExit(f"OPTSCHED_TEST_KILL_AT={spec!r}: expected commit:N or write:N")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args()
    spec = load_settings()["TEST_KILL_AT"]
    if spec:
        install(spec)
    from api.serve import serve

    serve(host="127.0.0.1", port=args.port, workers=args.workers, threads=args.threads)


if __name__ == "__main__":
    main()
