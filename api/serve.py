"""Run the service under gunicorn: one gunicorn worker process with threads, which owns the one solver pool.

Why one gunicorn worker: solves run in the solver pool's own processes, so the HTTP side only waits on I/O
and threads are enough; a single HTTP process means exactly one solver pool per server (several gunicorn
workers would each start one) and lets POST wait in-process for its solve. gunicorn restarts that worker if
it dies, and the new one requeues the plans the old one left (see optsched.jobs.ProcessPool.start).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from gunicorn.app.base import BaseApplication

from optsched.service.settings import load_settings

# One line per request: client, request line, status, bytes, latency in milliseconds.
ACCESS_LOG_FORMAT = '%(h)s "%(r)s" %(s)s %(B)sB %(M)sms'
DEFAULT_HTTP_THREADS = 32


class _Gunicorn(BaseApplication):
    def __init__(self, options: dict[str, Any], app_config: dict[str, Any]):
        self.options = options
        self.app_config = app_config
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            if key in self.cfg.settings:  # e.g. control_socket_disable exists from gunicorn 25 on only
                self.cfg.set(key, value)

    def load(self):
        from api import create_app

        logging.basicConfig(level=logging.INFO, format="%(asctime)s [%(process)d] %(levelname)s %(name)s: %(message)s")
        return create_app(self.app_config)


def _worker_exit(server, worker) -> None:
    """Stop the solver pool with the gunicorn worker: plans in flight go back to queued."""
    app = getattr(worker, "wsgi", None)
    if app is not None and hasattr(app, "extensions"):
        from api import shutdown

        shutdown(app)


def serve(
    host: str = "127.0.0.1",
    port: int = 8080,
    workers: int | None = None,
    threads: int = DEFAULT_HTTP_THREADS,
    timeout_s: int = 60,
) -> None:
    """Serve until interrupted; `workers` solver processes (None: OPTSCHED_WORKERS, else one per core)."""
    options = {
        "bind": f"{host}:{port}",
        "workers": 1,
        "worker_class": "gthread",
        "threads": threads,
        "timeout": timeout_s,
        "graceful_timeout": 10,
        "accesslog": "-",
        "errorlog": "-",
        "access_log_format": ACCESS_LOG_FORMAT,
        "worker_exit": _worker_exit,
        "proc_name": "optsched",
        "control_socket_disable": True,  # several servers on one machine would share ~/.gunicorn/gunicorn.ctl
    }
    app_config = {} if workers is None else {"WORKERS": workers}
    if not os.environ.get("OPTSCHED_SYNC_WAIT_SLOTS"):
        app_config["SYNC_WAIT_SLOTS"] = max(1, threads // 2)  # half the threads stay free for /healthz and reads
    load_settings(app_config)  # a bad OPTSCHED_* variable fails here, before gunicorn starts
    _Gunicorn(options, app_config).run()
