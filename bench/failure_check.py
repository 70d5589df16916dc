"""Cost of checking a night queue's device failures (issue 25): N one-device failures of one group, the schema's
check (devices down at each failure) and the timeline verifier's down spans, in seconds.

    .venv/bin/python -m bench.failure_check 1000 10000 100000
"""

from __future__ import annotations

import sys
import time

from optsched.schema.night import _failure_problems
from optsched.verify.timeline import down_spans
from tests.support.factories import failure_queue


def main(sizes: list[int]) -> None:
    for n in sizes:
        q = failure_queue(n)
        started = time.perf_counter()
        problems = _failure_problems(q)
        checked = time.perf_counter() - started
        started = time.perf_counter()
        spans = down_spans(q)
        spanned = time.perf_counter() - started
        print(
            f"{n:>8,} failures: schema check {checked:7.3f} s ({len(problems)} problems), "
            f"verifier down spans {spanned:7.3f} s ({len(spans):,} devices)"
        )


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1_000, 10_000])
