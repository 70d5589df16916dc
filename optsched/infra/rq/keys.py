"""What optsched keeps in Redis for one queue name: the Redis connection, the RQ queue, its jobs' ids, the lease
keys; shared by the API side (optsched.infra.rq.queue) and the workers."""

from __future__ import annotations

import math
from urllib.parse import urlsplit, urlunsplit

from redis import Redis
from redis.client import Pipeline
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from rq import Queue
from rq.job import Job
from rq.serializers import JSONSerializer

from optsched.infra.rq.lease import Lease
from optsched.infra.store import PlanRecord

DEFAULT_QUEUE_NAME = "optsched"
# How long RQ keeps a finished or failed job's record (the store keeps the result; these are for diagnosis).
RESULT_TTL_S = 600
FAILURE_TTL_S = 86_400
# The job function by the name queued jobs carry: the package's re-export, so that moving the function between
# modules strands no queued job.
JOB_FUNCTION = "optsched.infra.rq.solve_job"
# What Redis raises when it does not answer (down, restarting, loading its data, cut off): an outage, not a bug.
QUEUE_OUTAGES: tuple[type[Exception], ...] = (RedisConnectionError, RedisTimeoutError)


def job_id(plan_id: str, attempts: int) -> str:
    """RQ job id of the next claim of a row that has been claimed `attempts` times."""
    return f"{plan_id}-{attempts}"


def plan_id_of(rq_job_id: str) -> str:
    return rq_job_id.rsplit("-", 1)[0]


def claim_of(rq_job_id: str) -> int:
    """The claim number (the row's `attempts` once claimed) that the RQ job `rq_job_id` makes when it runs."""
    return int(rq_job_id.rsplit("-", 1)[1]) + 1


def redacted(url: str) -> str:
    """The URL without its password, for logs and summaries."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


class Keys:
    """Redis connection, RQ queue and lease keys of one queue name."""

    def __init__(self, url: str, queue_name: str):
        self.url = url
        self.queue_name = queue_name
        # Timeouts: a Redis that stops answering mid-command is an outage within seconds, never a hang.
        self.redis = Redis.from_url(url, socket_connect_timeout=5, socket_timeout=10, socket_keepalive=True,
                                    health_check_interval=30)
        self.queue = Queue(queue_name, connection=self.redis, serializer=JSONSerializer)

    def lease_key(self, plan_id: str) -> str:
        return f"optsched:{self.queue_name}:lease:{plan_id}"

    def lease(self, plan_id: str) -> Lease | None:
        return Lease.loads(self.redis.get(self.lease_key(plan_id)))

    def enqueue(self, record: PlanRecord, budget_s: float, grace_s: float, *, at_front: bool = False,
                pipeline: Pipeline | None = None) -> Job:
        """One RQ job for the next claim of `record`; its timeout is the solve budget plus the grace period (written
        by `pipeline` when given, which the caller executes)."""
        timeout = math.ceil(budget_s + grace_s)
        return self.queue.enqueue_call(
            JOB_FUNCTION,
            args=(record.id,),
            job_id=job_id(record.id, record.attempts),
            timeout=max(1, timeout),
            result_ttl=RESULT_TTL_S,
            failure_ttl=FAILURE_TTL_S,
            description=f"solve {record.kind} {record.id}",
            at_front=at_front,
            pipeline=pipeline,
        )

    def in_flight(self) -> dict[str, tuple[str, str]]:
        """Row id -> (RQ job id, stage) of the jobs a worker has taken off the queue: `intermediate` (dequeued, not
        started yet: RQ's intermediate queue) or `started`."""
        # RQ documents no API for its intermediate queue; Queue.intermediate_queue is its unprefixed accessor.
        found = {plan_id_of(i): (i, "intermediate") for i in self.queue.intermediate_queue.get_job_ids()}
        # cleanup=False: a read must not move RQ's abandoned jobs to its failed registry.
        started = self.queue.started_job_registry.get_job_ids(cleanup=False)
        found.update((plan_id_of(i), (i, "started")) for i in started)
        return found
