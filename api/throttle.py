"""The guess throttle: a token bucket per client address that bounds how many wrong tokens it may try.

Each wrong credential (a bearer token, the login form's token, a session cookie that does not check out) takes one
token from the client address's bucket, which holds at most `burst` and refills at `rate_per_s`; while it is
empty every request of that address that needs authentication answers 429 with Retry-After, before its credential
is even compared, so guesses are bounded at `rate_per_s` per address. Right credentials take nothing: a client
that knows its token is never slowed. The address is the TCP peer's (`request.remote_addr`; behind a reverse
proxy, every client shares the proxy's bucket unless the proxy does its own throttling).

At most `max_clients` buckets are kept (the least recently used goes first), so memory stays bounded whatever the
number of addresses.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable

MAX_CLIENTS = 10_000


class Throttle:
    """Token buckets by client address (see the module docstring); thread-safe."""

    def __init__(self, rate_per_s: float, burst: int, *, max_clients: int = MAX_CLIENTS,
                 clock: Callable[[], float] = time.monotonic):
        self.rate_per_s = rate_per_s
        self.burst = burst
        self.max_clients = max_clients
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # client -> (tokens, as of)

    def _tokens(self, client: str, now: float) -> float:
        tokens, at = self._buckets.get(client, (float(self.burst), now))
        return min(float(self.burst), tokens + (now - at) * self.rate_per_s)

    def wait_s(self, client: str) -> float:
        """Seconds until `client` may try a credential again (0: now)."""
        with self._lock:
            tokens = self._tokens(client, self._clock())
        return 0.0 if tokens >= 1.0 else (1.0 - tokens) / self.rate_per_s

    def failed(self, client: str) -> None:
        """`client` sent a wrong credential: one token less."""
        with self._lock:
            now = self._clock()
            self._buckets[client] = (max(0.0, self._tokens(client, now) - 1.0), now)
            self._buckets.move_to_end(client)
            while len(self._buckets) > self.max_clients:
                self._buckets.popitem(last=False)
