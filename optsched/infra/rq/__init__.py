"""Solves on RQ workers over Redis: the `SolveQueue` for many machines, chosen by OPTSCHED_QUEUE_URL.

- `queue`: `RQQueue`, what the API (and `optsched batch`) submit to: one RQ job per claim of a stored row;
- `keys`: what optsched keeps in Redis per queue name (the RQ queue, job ids, lease keys);
- `lease`: a solving row's lease, renewed by its horse while it solves;
- `job`: `solve_job`, the RQ job a work horse runs (claim, solve, write the answer);
- `pricing`: `price_chunk`, the RQ job a worker runs for a large solve's pricing round (`RQPricing`);
- `spool`: a finished solve's answer, kept on this machine while the database does not answer;
- `sweep`: recovery of rows no live process owns, run by every worker pool;
- `worker`: `optsched worker`'s pool of RQ workers (`run_workers`);
- `context`: what every worker process shares (`configure`).
"""

from optsched.infra.rq.context import WorkerContext, configure
from optsched.infra.rq.job import solve_job
from optsched.infra.rq.keys import QUEUE_OUTAGES, job_id, redacted
from optsched.infra.rq.lease import Lease
from optsched.infra.rq.pricing import RQPricing, price_chunk
from optsched.infra.rq.queue import RQQueue
from optsched.infra.rq.worker import open_store, run_workers

__all__ = [
    "QUEUE_OUTAGES",
    "Lease",
    "RQPricing",
    "RQQueue",
    "WorkerContext",
    "configure",
    "job_id",
    "open_store",
    "price_chunk",
    "redacted",
    "run_workers",
    "solve_job",
]
