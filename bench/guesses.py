"""Token guessing against a real `optsched serve`: how many wrong tokens per second the server checks, with the
guess throttle (OPTSCHED_AUTH_FAILURES_PER_S, OPTSCHED_AUTH_FAILURE_BURST) at its defaults and set out of the way
(issue 25, item 6b: "/login has no throttle (420 guesses/s)").

    python -m bench.guesses                    # 8 threads x 15 s per mode, POST /login and GET /v1/plans
    python -m bench.guesses --seconds 5 --out /tmp/g.md

Each mode starts its own server (one team's token, no solver processes) and sends wrong tokens from 8 threads on
one keep-alive connection each, half to the login form and half as bearer tokens; a guess counts as checked when
its answer is 401 (the token was compared and refused) and as refused unchecked when it is 429. Meanwhile one
more thread probes /healthz every 50 ms. Results go to bench/results/guesses.md.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import requests

from tests.support.server import LiveServer

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "guesses.md"
TOKEN = "bench-guesses-token-8c2d4e6f"


def attack(mode: str, seconds: float, threads: int) -> dict:
    env = {"OPTSCHED_API_TOKEN": TOKEN, "OPTSCHED_START_WORKERS": "false"}
    if mode == "unthrottled":
        env["OPTSCHED_AUTH_FAILURE_BURST"] = str(10**9)
    with tempfile.TemporaryDirectory() as folder, LiveServer(Path(folder) / "g.db", Path(folder) / "g.log",
                                                              threads=16, env=env) as server:
        base = server.start()
        answers: Counter = Counter()
        lock = threading.Lock()
        stop = time.monotonic() + seconds
        probes: list[float] = []

        def guess(n: int) -> None:
            session = requests.Session()
            i = 0
            while time.monotonic() < stop:
                i += 1
                wrong = f"guess-{n}-{i:012d}"
                if i % 2:
                    code = session.post(f"{base}/login", data={"token": wrong}, allow_redirects=False).status_code
                else:
                    code = session.get(f"{base}/v1/plans", headers={"Authorization": f"Bearer {wrong}"}).status_code
                with lock:
                    answers[code] += 1

        def probe() -> None:
            while time.monotonic() < stop:
                started = time.monotonic()
                requests.get(f"{base}/healthz", timeout=10)
                probes.append(time.monotonic() - started)
                time.sleep(0.05)

        workers = [threading.Thread(target=guess, args=(n,)) for n in range(threads)] + [threading.Thread(target=probe)]
        for t in workers:
            t.start()
        for t in workers:
            t.join()
        right = requests.get(f"{base}/v1/plans", headers={"Authorization": f"Bearer {TOKEN}"}).status_code
    probes.sort()
    return {"mode": mode, "answers": answers, "seconds": seconds, "right_after": right,
            "healthz_p50": statistics.median(probes), "healthz_p99": probes[int(0.99 * (len(probes) - 1))]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    load = os.getloadavg()
    results = [attack(mode, args.seconds, args.threads) for mode in ("unthrottled", "throttled")]
    load_after = os.getloadavg()
    lines = [
        "# Token guessing against `optsched serve`",
        "",
        f"- command: `.venv/bin/python -m bench.guesses{' ' + ' '.join(sys.argv[1:]) if sys.argv[1:] else ''}`",
        f"- date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; {platform.node()}, {os.cpu_count()} cores,"
        f" load average {load[0]:.2f} before, {load_after[0]:.2f} after",
        f"- {args.threads} threads from one address for {args.seconds:g} s each, half POST /login, half bearer "
        "tokens on GET /v1/plans; /healthz probed every 50 ms meanwhile",
        "",
        "| mode | requests | checked (401) | refused unchecked (429) | checked guesses / s | /healthz p50 | p99 |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    names = {"unthrottled": "throttle out of the way (burst 10^9)", "throttled": "defaults (1 / s, burst 10)"}
    for r in results:
        a = r["answers"]
        total = sum(a.values())
        lines.append(f"| {names[r['mode']]} | {total:,} | {a[401]:,} | {a[429]:,} | {a[401] / r['seconds']:,.1f} | "
                     f"{r['healthz_p50'] * 1000:.1f} ms | {r['healthz_p99'] * 1000:.1f} ms |")
        other = {code: n for code, n in a.items() if code not in (401, 429)}
        if other:
            lines.append(f"\nOther answers in mode {r['mode']}: {other}")
    lines += ["", f"After the throttled run, the right token from the same address: {results[1]['right_after']} "
              "(the bucket refills at the rate; a request with the right token while it is empty is a 429 too)."]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
