"""Charts drawn apart from the HTTP process: OPTSCHED_CHART_WORKERS drawing processes (spawned on first use,
each drawing one chart at a time), a chart killed with its process past OPTSCHED_CHART_TIMEOUT_S (another process
takes its place); the last CHART_CACHE_SIZE drawn are kept by key (a finished result never changes).

Why: matplotlib draws in C with the interpreter's lock held for most of it. Drawn in the HTTP process behind one
lock, a 9,990-point queueing front held it for 88 s, a cached placement chart waited 83 s behind it and 34 GETs
of a fresh chart left /healthz unanswered for 99 s at 1.58 GB. Here the HTTP thread only waits on a pipe, one slow
chart holds one of the processes, requests for a chart being drawn wait for that one drawing, and requests beyond
the processes and their waiting room get 503 with Retry-After at once instead of holding HTTP threads. The size
table (api/costs.py) still refuses charts too large to draw, and that verdict is kept by key like a chart
(ChartRefused): a storm of GETs of a 1,000-job chart validated the result once per admitted request to find it too
large again (/healthz p99 1.15 s), where each now gets the kept 409 at once.
"""

from __future__ import annotations

import logging
import multiprocessing
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

log = logging.getLogger(__name__)

# Finished results never change, so their charts are kept: the last CHART_CACHE_SIZE drawn, by key; and so are the
# refusals (a few hundred bytes each), the last REFUSED_CACHE_SIZE.
CHART_CACHE_SIZE = 32
REFUSED_CACHE_SIZE = 1024
# Requests that may wait for a drawing slot, per slot, beyond those drawing; past them a request gets 503 at once.
WAITING_PER_SLOT = 2
RETRY_AFTER_S = 5
# A drawing process is replaced after this many charts; one that starts gets STARTUP_S more to import matplotlib.
DRAWS_PER_PROCESS = 200
STARTUP_S = 20.0
PROCESS_NAME = "optsched-chart"
# Math text off so that ids such as `$x$` are drawn as written.
CHART_RC: dict[Any, Any] = {"text.parse_math": False, "text.usetex": False}


class ChartUnavailable(Exception):
    """The chart was not drawn now: every slot busy, or its drawing failed or took too long (503, retry)."""

    def __init__(self, message: str, retry_after_s: int = RETRY_AFTER_S):
        super().__init__(message)
        self.retry_after_s = retry_after_s


class ChartRefused(Exception):
    """The chart of this key is never drawn (too large for this server, nothing to draw): raised by a `prepare`,
    kept by key and raised again at once for every later request of that key; `answer` is what the client gets."""

    def __init__(self, answer: Exception):
        super().__init__(str(answer))
        self.answer = answer


@dataclass
class _Flight:
    done: threading.Event = field(default_factory=threading.Event)
    data: bytes | None = None
    error: Exception | None = None  # ChartUnavailable, or what the document's `prepare` raised


def _serve(conn: Connection) -> None:
    """A drawing process: (draw, document) in, ("png", bytes) or ("error", why) out, until None or EOF (its
    parent gone). Named PROCESS_NAME in `ps` and /proc/<pid>/comm, so that it is not taken for a solver."""
    _name_process(PROCESS_NAME)
    import matplotlib

    import optsched.charts  # noqa: F401 - imported once here, not on the first chart

    conn.send(("ready", None))
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        draw, document = task
        try:
            with matplotlib.rc_context(CHART_RC):
                conn.send(("png", draw(document)))
        except Exception as exc:  # noqa: BLE001 - the HTTP process answers with the reason
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


def _name_process(name: str) -> None:
    """Linux: the process's name (prctl PR_SET_NAME, at most 15 bytes); elsewhere nothing."""
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        libc.prctl(15, name.encode()[:15], 0, 0, 0)
    except (OSError, AttributeError):
        pass


class _Worker:
    """One drawing process (spawned: a fresh interpreter, no lock of the threaded HTTP process inherited)."""

    def __init__(self) -> None:
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child,), daemon=True, name=PROCESS_NAME)
        self.process.start()
        child.close()
        self.drawn = 0
        self.ready = False

    def stop(self) -> None:
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.process.join(0.5)
        self.kill()

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
            self.process.join(2.0)
        self.conn.close()


class ChartDrawer:
    """Draws charts in their own processes: `png(key, draw, document)` or `png_of(key, draw, prepare)` (the
    document made only for a drawing that starts), cached by `key`."""

    def __init__(self, workers: int, timeout_s: float):
        self.workers = workers
        self.timeout_s = timeout_s
        # Idle drawing processes, the last returned first (it is warm); None is a slot whose process starts when
        # it is first needed (or after one was killed).
        self._idle: queue.LifoQueue[_Worker | None] = queue.LifoQueue()
        for _ in range(workers):
            self._idle.put(None)
        self._admitted = threading.BoundedSemaphore(workers * (1 + WAITING_PER_SLOT))
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, bytes] = OrderedDict()
        self._refused: OrderedDict[str, ChartRefused] = OrderedDict()
        self._flights: dict[str, _Flight] = {}

    def png(self, key: str, draw: Callable[[Any], bytes], document: Any) -> bytes:
        """The chart `draw(document)`: from the cache, from a drawing of the same key under way, or drawn now;
        ChartUnavailable when every slot and waiting place is taken (a request waiting for a drawing under way
        takes a place too: each holds an HTTP thread), or the drawing fails or overruns."""
        return self.png_of(key, draw, lambda: document)

    def png_of(self, key: str, draw: Callable[[Any], bytes], prepare: Callable[[], Any]) -> bytes:
        """As `png`, with the document given by `prepare()`, called only by the request whose drawing starts (it
        holds a drawing slot), never for a chart cached, refused or being drawn for another request: validating a
        400-job result took the HTTP process's time for every request of a chart storm, refused ones included.
        What `prepare` raises (a 409: nothing to draw) reaches the requests waiting for this drawing too; a
        ChartRefused is kept and raised again for the key without calling `prepare`."""
        with self._lock:
            data = self._cache.get(key)
            if data is not None:
                self._cache.move_to_end(key)
                return data
            refused = self._refused.get(key)
            if refused is not None:
                self._refused.move_to_end(key)
                raise refused
        if not self._admitted.acquire(blocking=False):
            raise ChartUnavailable(
                f"{self.workers} chart(s) are being drawn and more are waiting (OPTSCHED_CHART_WORKERS); retry shortly"
            )
        try:
            return self._drawn_once(key, draw, prepare)
        finally:
            self._admitted.release()

    def _drawn_once(self, key: str, draw: Callable[[Any], bytes], prepare: Callable[[], Any]) -> bytes:
        """The chart from the cache, from the drawing of `key` under way, or drawn by this call."""
        with self._lock:
            data = self._cache.get(key)
            if data is not None:
                return data
            flight = self._flights.get(key)
            owner = flight is None
            if flight is None:
                flight = self._flights[key] = _Flight()
        if not owner:
            if not flight.done.wait(self.timeout_s * 2 + 5):
                raise ChartUnavailable("the chart is still being drawn; retry shortly")
            if flight.error is not None:
                raise flight.error
            assert flight.data is not None
            return flight.data
        try:
            flight.data = self._draw_in_slot(draw, prepare)
            with self._lock:
                self._cache[key] = flight.data
                while len(self._cache) > CHART_CACHE_SIZE:
                    self._cache.popitem(last=False)
            return flight.data
        except ChartRefused as exc:
            flight.error = exc
            with self._lock:
                self._refused[key] = exc
                while len(self._refused) > REFUSED_CACHE_SIZE:
                    self._refused.popitem(last=False)
            raise
        except Exception as exc:
            flight.error = exc
            raise
        finally:
            with self._lock:
                self._flights.pop(key, None)
            flight.done.set()

    def _draw_in_slot(self, draw: Callable[[Any], bytes], prepare: Callable[[], Any]) -> bytes:
        try:
            worker = self._idle.get(timeout=self.timeout_s)
        except queue.Empty:
            raise ChartUnavailable("every chart slot stayed busy; retry shortly") from None
        try:
            document = prepare()
        except BaseException:
            self._idle.put(worker)  # nothing was sent to the process: it stays as it was
            raise
        try:
            worker = worker or _Worker()
            data = self._draw(worker, draw, document)
        except BaseException:
            if worker is not None:
                worker.kill()
            self._idle.put(None)
            raise
        worker.drawn += 1
        if worker.drawn >= DRAWS_PER_PROCESS:
            worker.stop()  # matplotlib's caches grow; a fresh process starts on the next chart
            worker = None
        self._idle.put(worker)
        return data

    def _draw(self, worker: _Worker, draw: Callable[[Any], bytes], document: Any) -> bytes:
        if not worker.ready:
            # A process being started imports matplotlib first: that does not count against the chart's time.
            if not worker.conn.poll(STARTUP_S):
                raise ChartUnavailable(f"no drawing process started within {STARTUP_S:g} s; retry shortly")
            worker.conn.recv()
            worker.ready = True
        started = time.monotonic()
        worker.conn.send((draw, document))
        if not worker.conn.poll(self.timeout_s):
            raise ChartUnavailable(
                f"the chart took longer than {self.timeout_s:g} s to draw and was stopped (OPTSCHED_CHART_TIMEOUT_S)"
            )
        try:
            kind, payload = worker.conn.recv()
        except EOFError:
            raise ChartUnavailable(
                f"the chart's drawing process ended without a chart (exit code {worker.process.exitcode})"
            ) from None
        if kind != "png":
            log.error("drawing a chart failed: %s", payload)
            raise ChartUnavailable(f"drawing the chart failed: {payload}")
        log.debug("chart drawn in %.2f s", time.monotonic() - started)
        return bytes(payload)

    def stop(self) -> None:
        """End the idle drawing processes (those drawing end with their chart: they are daemons)."""
        while True:
            try:
                worker = self._idle.get_nowait()
            except queue.Empty:
                return
            if worker is not None:
                worker.stop()
