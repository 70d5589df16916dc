"""Real `optsched worker` pools on a Redis queue of their own, for the benchmarks that fan work out to them."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

from rq import Queue, Worker

from optsched.infra.rq.keys import Keys
from optsched.infra.rq.pricing import pricing_queue_name

OPTSCHED = Path(sys.executable).with_name("optsched")
BENCH_REDIS = os.environ.get("OPTSCHED_BENCH_REDIS", "redis://127.0.0.1:6379/14")


class Fleet:
    """`optsched worker --concurrency n` on a queue of its own (an SQLite store in `store`), until closed."""

    def __init__(self, n: int, store: Path, redis_url: str = BENCH_REDIS):
        self.queue_name = f"optsched-bench-{uuid.uuid4().hex[:8]}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPTSCHED_")}
        env.update(OPTSCHED_QUEUE_URL=redis_url, OPTSCHED_QUEUE_NAME=self.queue_name,
                   OPTSCHED_DATABASE_URL=f"sqlite:///{store}")
        self.process = subprocess.Popen([str(OPTSCHED), "worker", "-c", str(n)], env=env, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, start_new_session=True)
        self.keys = Keys(redis_url, self.queue_name)
        queue = Queue(pricing_queue_name(self.queue_name), connection=self.keys.redis)
        deadline = time.monotonic() + 120
        while Worker.count(connection=self.keys.redis, queue=queue) < n:
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.close()
                raise RuntimeError(f"{n} workers did not start")
            time.sleep(0.2)

    def close(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, 15)
            self.process.wait(60)
        for key in self.keys.redis.scan_iter(match=f"*{self.queue_name}*", count=1000):
            self.keys.redis.delete(key)
