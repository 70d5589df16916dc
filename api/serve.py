"""Run the service under waitress: one HTTP process (reading requests apart from the application threads) under a
small supervisor that restarts it if it dies.

Why waitress: it reads every request (headers and body) in one event loop and hands a request to an application
thread only once it has arrived whole, so a client that sends half a request, or sends it a byte a minute, holds a
connection (OPTSCHED_MAX_CONNECTIONS of them) but never a thread; the threads stay free for /healthz and real work.
gunicorn's gthread worker, which this replaced, parses a request in the thread that serves it, so 32 stalled
connections froze 32 threads and with them the service (bench/results/reliability.md, "Hostile clients", has
the figures). On top of waitress, this module adds what the service promises:

- a request that has not arrived whole OPTSCHED_READ_TIMEOUT_S after its first byte gets 408 and the connection
  is closed (waitress alone would wait for its idle timeout and close without an answer);
- every error the server itself produces (400 malformed request or chunked body, 408, 413, 431, 500) is an
  RFC 9457 problem document like the application's, with the same security headers;
- one access-log line per request with the query's values redacted (a `token=` or any other secret sent in a
  URL never reaches the log) and every byte of the path that is not printable ASCII percent-encoded.

Why one HTTP process: solves run in the solver pool's own processes, so the HTTP side only waits on I/O and
threads are enough; a single HTTP process means exactly one solver pool per server and lets POST wait
in-process for its solve. The supervisor (the process `optsched serve` starts) binds the socket, forks the HTTP
process and forks a new one if it dies; the new one requeues the plans the old one left (ProcessPool.start).
SIGTERM or SIGINT stops both: the HTTP process stops its pool (plans in flight go back to queued).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qsl, quote

from waitress.adjustments import Adjustments
from waitress.channel import HTTPChannel
from waitress.parser import HTTPRequestParser
from waitress.server import TcpWSGIServer
from waitress.task import ErrorTask, ThreadedTaskDispatcher
from waitress.utilities import Error

from api.headers import SERVER_HEADERS
from optsched.service.settings import given_in_environment, load_settings
from optsched.service.tenants import tenants_of

log = logging.getLogger("optsched.serve")
access_log = logging.getLogger("optsched.access")

DEFAULT_HTTP_THREADS = 32
# SIGTERM stops the server within seconds under any load: the HTTP process gives its request threads
# THREADS_STOP_S to finish and ends itself HTTP_STOP_S after the signal whatever it is doing (plans it was
# solving are requeued by the pool's stop, or adopted at the next start); the supervisor SIGKILLs it after
# GRACEFUL_STOP_S, for the case where its main thread never gets to run the signal handler.
THREADS_STOP_S = 2.0
HTTP_STOP_S = 4.0
GRACEFUL_STOP_S = 5.0
# Largest request line plus headers read (431 above): far above any real client's.
MAX_HEADER_BYTES = 64 * 1024
# A dead HTTP process is forked again after this pause, longer when it dies again soon after starting.
RESTART_PAUSE_S = (0.5, 5.0)
LOG_FORMAT = "%(asctime)s [%(process)d] %(levelname)s %(name)s: %(message)s"
PROBLEM_JSON = "application/problem+json"
REDACTED = "<redacted>"
# Query parameter names written to the access log (their values never are); any other name is redacted too,
# since a client may put a secret where a name goes (`/?<token>`).
LOGGED_QUERY_NAMES = frozenset({"limit", "cursor", "status", "kind", "token", "next"})
# Path bytes written as they are in the access log; every other byte is percent-encoded.
_PATH_SAFE = "/:@!$&'()*+,;=-._~%"


# -- the HTTP server ---------------------------------------------------------------------------------------------


class RequestTimeout(Error):
    code = 408
    reason = "Request Timeout"


class _TimedParser(HTTPRequestParser):
    """A request being read, with the time its first byte arrived."""

    def __init__(self, adj: Adjustments):
        super().__init__(adj)
        self.started = time.monotonic()


class _ProblemErrorTask(ErrorTask):
    """The server's own error responses as problem documents (waitress writes text/plain)."""

    def execute(self) -> None:
        error = self.request.error
        body = json.dumps(
            {
                "type": "about:blank",
                "title": error.reason,
                "status": error.code,
                "detail": _error_detail(error),
                "errors": [],
            }
        ).encode()
        self.status = f"{error.code} {error.reason}"
        self.response_headers.append(("Content-Type", PROBLEM_JSON))
        self.response_headers.extend(SERVER_HEADERS.items())  # as on the app's own responses (api/headers.py)
        self.set_close_on_finish()
        self.content_length = len(body)
        self.write(body)
        access_log.info('%s "-" %s %sB (answered by the HTTP server)', self.channel.addr[0], error.code, len(body))


def _error_detail(error: Error) -> str:
    if isinstance(error, RequestTimeout):
        return str(error.body)
    if error.code == 500:
        return "the server failed to handle this request; the error was logged"
    return str(error.body).strip()[:300]


class _Channel(HTTPChannel):
    parser_class = _TimedParser
    error_task_class = _ProblemErrorTask


class _Server(TcpWSGIServer):
    """waitress's TCP server, whose maintenance also answers 408 to requests that do not arrive in time."""

    channel_class = _Channel
    read_timeout_s = 20.0

    def run(self) -> None:
        """waitress's loop until SIGTERM (SystemExit), then its threads get THREADS_STOP_S (waitress waits 5 s)."""
        try:
            adj = self.adj
            self.asyncore.loop(timeout=adj.asyncore_loop_timeout, map=self._map, use_poll=adj.asyncore_use_poll)
        except (SystemExit, KeyboardInterrupt):
            self.task_dispatcher.shutdown(timeout=THREADS_STOP_S)

    def maintenance(self, now: float) -> None:
        """First 408 to requests begun more than read_timeout_s ago; then waitress closes idle connections."""
        started_before = time.monotonic() - self.read_timeout_s
        for channel in list(self.active_channels.values()):
            with channel.requests_lock:
                request = channel.request
                if channel.requests or request is None or request.completed or channel.will_close:
                    continue
                if request.started > started_before:
                    continue
                request.error = RequestTimeout(
                    f"the request did not arrive whole within {self.read_timeout_s:g} s (OPTSCHED_READ_TIMEOUT_S)"
                )
                request.completed = True
                channel.request = None
                channel.requests.append(request)
            self.add_task(channel)
        super().maintenance(now)  # a connection without a request under way closes after channel_timeout


def make_server(app: Callable, sock: socket.socket, settings: dict[str, Any], threads: int) -> _Server:
    """The waitress server for `app` on the listening socket `sock`, configured from the service's settings."""
    adj = Adjustments(
        sockets=[sock],
        threads=threads,
        connection_limit=settings["MAX_CONNECTIONS"],
        channel_timeout=max(1, int(settings["READ_TIMEOUT_S"])),
        cleanup_interval=1,
        max_request_header_size=MAX_HEADER_BYTES,
        max_request_body_size=int(settings["MAX_BODY_MB"] * 2**20) + 1,
        ident="optsched",
        expose_tracebacks=False,
        asyncore_use_poll=True,  # select() fails past 1,024 file descriptors
    )
    dispatcher = ThreadedTaskDispatcher()
    dispatcher.set_thread_count(adj.threads)
    server = _Server(
        app,
        map={},
        _sock=sock,
        dispatcher=dispatcher,
        adj=adj,
        bind_socket=False,
        sockinfo=(sock.family, sock.type, sock.proto, sock.getsockname()),
    )
    server.read_timeout_s = float(settings["READ_TIMEOUT_S"])
    return server


# -- the access log ----------------------------------------------------------------------------------------------


def log_target(environ: dict[str, Any]) -> str:
    """The request target as logged: the path percent-encoded where it is not printable ASCII, every query
    value replaced by <redacted> (the names of known parameters kept)."""
    path = quote(environ.get("PATH_INFO", "").encode("latin-1", "replace"), safe=_PATH_SAFE)
    query = environ.get("QUERY_STRING", "")
    if not query:
        return path
    names = [name if name in LOGGED_QUERY_NAMES else REDACTED for name, _ in parse_qsl(query, keep_blank_values=True)]
    return f"{path}?" + "&".join(f"{name}={REDACTED}" for name in names) if names else f"{path}?{REDACTED}"


class AccessLog:
    """WSGI middleware: one line per request once its response is sent: client, request line (redacted), status,
    bytes, milliseconds."""

    def __init__(self, app: Callable):
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: Callable) -> Iterable[bytes]:
        started = time.monotonic()
        status = ["-"]

        def recording_start_response(code: str, headers: list, exc_info: Any = None):
            status[0] = code.split(" ", 1)[0]
            return start_response(code, headers, exc_info)

        body = self.app(environ, recording_start_response)
        return _Logged(body, environ, status, started)


class _Logged:
    def __init__(self, body: Iterable[bytes], environ: dict[str, Any], status: list[str], started: float):
        self.body, self.environ, self.status, self.started, self.sent = body, environ, status, started, 0

    def __iter__(self):
        for chunk in self.body:
            self.sent += len(chunk)
            yield chunk

    def close(self) -> None:
        try:
            if hasattr(self.body, "close"):
                self.body.close()
        finally:
            e = self.environ
            access_log.info(
                '%s "%s %s %s" %s %sB %.0fms',
                e.get("REMOTE_ADDR", "-"),
                e.get("REQUEST_METHOD", "-"),
                log_target(e),
                e.get("SERVER_PROTOCOL", "-"),
                self.status[0],
                self.sent,
                (time.monotonic() - self.started) * 1000,
            )


# -- the supervisor ----------------------------------------------------------------------------------------------


def serve(
    host: str = "127.0.0.1",
    port: int = 8080,
    workers: int | None = None,
    threads: int = DEFAULT_HTTP_THREADS,
) -> None:
    """Serve until SIGTERM or SIGINT; `workers` solver processes (None: OPTSCHED_WORKERS, else one per core)."""
    app_config: dict[str, Any] = {} if workers is None else {"WORKERS": workers}
    if "SYNC_WAIT_SLOTS" not in given_in_environment():
        app_config["SYNC_WAIT_SLOTS"] = max(1, threads // 2)  # half the threads stay free for /healthz and reads
    settings = load_settings(app_config)  # a bad OPTSCHED_* variable fails here, before anything starts
    tenants_of(settings)  # so does a missing or short token (unless OPTSCHED_AUTH=off)
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, stream=sys.stdout)
    sock = _listen(host, port)
    log.info("listening on http://%s:%s (%d HTTP threads, at most %d connections, %g s to send a request)",
             host, port, threads, settings["MAX_CONNECTIONS"], settings["READ_TIMEOUT_S"])
    stop = threading.Event()
    child: list[int] = []

    def forward(signum: int, _frame: Any) -> None:
        stop.set()
        for pid in child:
            _signal(pid, signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    quick_deaths = 0
    while not stop.is_set():
        started = time.monotonic()
        pid = os.fork()
        if pid == 0:
            os._exit(_http_process(sock, app_config, settings, threads))
        child[:] = [pid]
        status = _wait(pid, stop)
        child.clear()
        if stop.is_set():
            break
        quick_deaths = quick_deaths + 1 if time.monotonic() - started < 10 else 0
        pause = RESTART_PAUSE_S[1] if quick_deaths > 3 else RESTART_PAUSE_S[0]
        log.error("the HTTP process %d ended (%s); starting another in %g s", pid, _describe(status), pause)
        stop.wait(pause)
    sock.close()


def _listen(host: str, port: int) -> socket.socket:
    info = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(info[0], socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(info[4])
    sock.listen(1024)
    return sock


def _wait(pid: int, stop: threading.Event) -> int:
    """The child's wait status; after a stop request, SIGKILL if it has not ended within GRACEFUL_STOP_S."""
    deadline: float | None = None
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if stop.is_set():
            deadline = deadline or time.monotonic() + GRACEFUL_STOP_S
            if time.monotonic() > deadline:
                _signal(pid, signal.SIGKILL)
        time.sleep(0.05)


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit code {os.waitstatus_to_exitcode(status)}"


def _end_now() -> None:
    log.warning("the HTTP process did not stop within %g s of SIGTERM; ending it now", HTTP_STOP_S)
    logging.shutdown()
    os._exit(0)


def _http_process(sock: socket.socket, app_config: dict[str, Any], settings: dict[str, Any], threads: int) -> int:
    """The forked HTTP process: the app (with its solver pool) behind waitress, until SIGTERM; its exit code."""

    def stop(_signum: int, _frame: Any) -> None:
        # Whatever the stop waits for (request threads, the solver pool, the database), the process ends in time.
        watchdog = threading.Timer(HTTP_STOP_S, _end_now)
        watchdog.daemon = True
        watchdog.start()
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    app = None
    try:
        from api import create_app, shutdown

        app = create_app(app_config)
        make_server(AccessLog(app), sock, settings, threads).run()  # returns on SystemExit (waitress stops threads)
        return 0
    except SystemExit:
        return 0
    except BaseException:  # noqa: BLE001 - the supervisor starts another; say why this one ended
        log.exception("the HTTP process failed")
        return 1
    finally:
        if app is not None:
            try:
                shutdown(app)  # the solver pool stops: plans in flight go back to queued
            except Exception:  # noqa: BLE001
                log.exception("stopping the solver pool failed")
        logging.shutdown()
