"""Discrete-event simulation of the priority M/G/c queue with ciw: replications, warm-up deletion, 95 % intervals.

Why ciw (ciw.readthedocs.io, Palmer et al. 2019, Journal of Simulation 13(1)) rather than simpy: ciw *is* a
queueing-network simulator, so priority classes, FCFS within a level, and preemption with a chosen policy are
parameters of its public `create_network` API, not code of ours; with simpy the queue, its priority order and the
interruption bookkeeping would all be ours to write and to get wrong.

Model, per replication r (independent seeds from numpy's SeedSequence(seed)):
- Poisson arrivals of each class; service times gamma with the class's mean m and scv (shape 1/scv, scale m scv;
  a constant m when scv = 0). Gamma because at scv = 1 it is exactly the exponential, so the closed-form checks
  run the very code path that non-exponential studies use.
- Preemptive discipline: ciw's "resume" (a preempted job later continues with the service it had left): that is
  the preemptive-resume discipline of the analytic formulas, and what a checkpointed training job does. With
  "resample" a preempted job would draw a new size, which changes the work distribution unless it is exponential.
- The run lasts H = jobs_per_replication / (total arrival rate) hours plus a 10 % tail; jobs arriving in
  [warmup_fraction H, H] are measured (earlier ones are the warm-up, deleted), so jobs still in service at H
  finish in the tail. Utilisation is the class's service time inside [warmup_fraction H, H] over c times its length.
- Each replication gives one mean per class; the estimate is their average and the half-width
  t(0.975, R - 1) s / sqrt(R).
- Each replication also gives its drift: the mean response of the jobs arriving in the second half of the
  measured window minus that of the first half. A queue that has not settled (near saturation, its relaxation
  time longer than the run) keeps filling up, so its drift is positive beyond noise and its means are not
  steady-state estimates (`SimulationRun.drift`; optsched.queueing.study reads it).

ciw draws from Python's global `random` generator (and sets `ciw.rng`); both are saved and restored around a
run, so a caller's random state is left as it was. Not thread-safe for that reason (the service uses processes).
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import version

import ciw
import numpy as np

from optsched.queueing.analytic import QueueClass
from optsched.queueing.schema import Discipline

logger = logging.getLogger(__name__)

PREEMPTION = "resume"
SERVICE_DISTRIBUTION = "gamma (shape 1/scv, scale mean*scv); constant when scv = 0"
TAIL_FRACTION = 0.1
# Two-sided 95 % Student t quantiles t(0.975, df) for df = 1..30; past 30 the Cornish-Fisher expansion.
T_975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip
Z_975 = 1.959963984540054


@dataclass(frozen=True, slots=True)
class Estimate:
    mean: float | None
    half_width: float | None


@dataclass(frozen=True, slots=True)
class SimulatedClass:
    wait: Estimate
    response: Estimate
    utilization: Estimate
    jobs: int  # measured jobs over all replications


@dataclass(frozen=True, slots=True)
class SimulationRun:
    """The per-class estimates and the run's drift: per replication, the mean response of the jobs arriving in
    the second half of the measured window minus that of the first half (all classes), estimated over the
    replications. A queue that settled has no drift beyond noise; one still filling up responds ever slower."""

    classes: tuple[SimulatedClass, ...]
    drift: Estimate
    response: Estimate  # all classes, the scale the drift is read against


@dataclass(frozen=True, slots=True)
class _Sums:
    response: float
    wait: float
    jobs: int
    busy: float


@dataclass(frozen=True, slots=True)
class _Halves:
    """Mean response (all classes) of the jobs arriving in the first and the second half of the measured window."""

    first: float | None
    second: float | None


def t_quantile_975(df: int) -> float:
    """t(0.975, df): from the table up to 30 degrees of freedom, else Cornish-Fisher (error < 1e-4)."""
    if df < 1:
        raise ValueError("a confidence interval needs at least two replications")
    if df <= len(T_975):
        return T_975[df - 1]
    z, v = Z_975, float(df)
    return (
        z
        + (z**3 + z) / (4 * v)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * v**3)
    )


def ciw_version() -> str:
    return f"ciw {version('ciw')}"


def simulate(
    classes: Sequence[QueueClass],
    c: int,
    discipline: Discipline,
    *,
    seed: int = 0,
    replications: int = 10,
    jobs_per_replication: int = 10_000,
    warmup_fraction: float = 0.2,
) -> SimulationRun:
    """Per-class estimates of mean wait, mean response and utilisation, in input order (stable queues only), and
    the run's drift, which tells whether the queue settled within the run."""
    if replications < 2:
        raise ValueError("replications must be at least 2 for a confidence interval")
    if not 0 <= warmup_fraction < 1:
        raise ValueError("warmup_fraction must be in [0, 1)")
    total_rate = sum(k.rate for k in classes)
    horizon = jobs_per_replication / total_rate
    seeds = np.random.SeedSequence(seed).generate_state(replications)
    saved_random, saved_rng = random.getstate(), getattr(ciw, "rng", None)
    try:
        runs = [
            _replication(classes, c, discipline, int(s), horizon, warmup_fraction * horizon) for s in seeds
        ]
    finally:
        random.setstate(saved_random)
        if saved_rng is not None:
            ciw.rng = saved_rng
    out = []
    for i in range(len(classes)):
        sums = [sums[i] for sums, _ in runs]
        out.append(
            SimulatedClass(
                wait=_estimate([s.wait / s.jobs for s in sums if s.jobs]),
                response=_estimate([s.response / s.jobs for s in sums if s.jobs]),
                utilization=_estimate([s.busy for s in sums]),
                jobs=sum(s.jobs for s in sums),
            )
        )
    drifts = [h.second - h.first for _, h in runs if h.first is not None and h.second is not None]
    totals = [(sum(x.response for x in sums), sum(x.jobs for x in sums)) for sums, _ in runs]
    return SimulationRun(
        classes=tuple(out),
        drift=_estimate(drifts),
        response=_estimate([response / jobs for response, jobs in totals if jobs]),
    )


def _estimate(values: list[float]) -> Estimate:
    """Mean of the replication means and its 95 % half-width (None below two replications)."""
    if not values:
        return Estimate(None, None)
    mean = math.fsum(values) / len(values)
    if len(values) < 2:
        return Estimate(mean, None)
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1))
    return Estimate(mean, t_quantile_975(len(values) - 1) * sd / math.sqrt(len(values)))


def _class_name(i: int) -> str:
    return f"class-{i:02d}"  # ciw orders classes by name; the index keeps the input order


def _service(k: QueueClass) -> ciw.dists.Distribution:
    if k.scv == 0:
        return ciw.dists.Deterministic(k.mean)
    return ciw.dists.Gamma(shape=1.0 / k.scv, scale=k.mean * k.scv)


def _replication(
    classes: Sequence[QueueClass], c: int, discipline: Discipline, seed: int, horizon: float, warmup: float
) -> tuple[list[_Sums], _Halves]:
    names = [_class_name(i) for i in range(len(classes))]
    priorities = {n: k.level for n, k in zip(names, classes, strict=True)}
    network = ciw.create_network(
        arrival_distributions={n: [ciw.dists.Exponential(k.rate)] for n, k in zip(names, classes, strict=True)},
        service_distributions={n: [_service(k)] for n, k in zip(names, classes, strict=True)},
        number_of_servers=[c],
        priority_classes=(priorities, [PREEMPTION]) if discipline == Discipline.preemptive else priorities,
    )
    ciw.seed(seed)
    sim = ciw.Simulation(network)
    sim.simulate_until_max_time(horizon * (1.0 + TAIL_FRACTION))
    index = {n: i for i, n in enumerate(names)}
    served: dict[int, float] = {}
    done: dict[int, tuple[int, float]] = {}  # id -> (class, response)
    arrivals: dict[int, float] = {}
    busy = [0.0] * len(classes)
    for r in sim.get_all_records(only=["service", "interrupted service"]):
        end = r.exit_date if r.record_type == "interrupted service" else r.service_end_date
        served[r.id_number] = served.get(r.id_number, 0.0) + (end - r.service_start_date)
        k = index[r.original_customer_class]
        busy[k] += max(0.0, min(end, horizon) - max(r.service_start_date, warmup))
        if r.record_type == "service" and warmup <= r.arrival_date < horizon:
            done[r.id_number] = (k, r.exit_date - r.arrival_date)
            arrivals[r.id_number] = r.arrival_date
    sums = [[0.0, 0.0, 0] for _ in classes]
    for job, (k, response) in done.items():
        sums[k][0] += response
        sums[k][1] += response - served[job]
        sums[k][2] += 1
    window = c * (horizon - warmup)
    logger.debug("replication seed %d: %d jobs measured", seed, len(done))
    middle = (warmup + horizon) / 2
    halves: tuple[list[float], list[float]] = ([], [])
    for job, (_, response) in done.items():
        halves[arrivals[job] >= middle].append(response)
    means = [math.fsum(h) / len(h) if h else None for h in halves]
    return (
        [_Sums(response=s[0], wait=s[1], jobs=int(s[2]), busy=busy[k] / window) for k, s in enumerate(sums)],
        _Halves(first=means[0], second=means[1]),
    )
