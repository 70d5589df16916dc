"""Following a 202 to its final state, as the tests and benchmarks do: GET the resource until its status is no
longer queued or solving (or the time is up), through a Flask test client or over HTTP."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import requests

PENDING = ("queued", "solving")


def until_final(fetch: Callable[[], dict[str, Any]], timeout_s: float, interval_s: float = 0.05) -> dict[str, Any]:
    """The last body `fetch` returned: the first whose status is final, or the one at the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        body = fetch()
        if body["status"] not in PENDING or time.monotonic() > deadline:
            return body
        time.sleep(interval_s)


def poll(client, location: str, timeout_s: float = 30.0, **kwargs: Any) -> dict[str, Any]:
    """GET `location` through a Flask test client until the resource's status is final."""
    return until_final(lambda: client.get(location, **kwargs).get_json(), timeout_s)


def poll_url(url: str, timeout_s: float = 120.0, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """GET `url` over HTTP until the resource's status is final."""
    return until_final(lambda: requests.get(url, headers=headers, timeout=30).json(), timeout_s, interval_s=0.1)
