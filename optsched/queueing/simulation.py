"""Discrete-event simulation of the priority M/G/c queue with ciw: replications, warm-up deletion, 95 % intervals.

Why ciw (ciw.readthedocs.io, Palmer et al. 2019, Journal of Simulation 13(1)) rather than simpy: ciw *is* a
queueing-network simulator, so priority classes, FCFS within a level, and preemption with a chosen policy are
parameters of its public `create_network` API, not code of ours; with simpy the queue, its priority order and the
interruption bookkeeping would all be ours to write and to get wrong.

Model, per replication r (independent seeds from numpy's SeedSequence(seed)):
- Poisson arrivals of each class; service times of the class's declared law (`work_hours.distribution`): gamma
  (shape 1/scv, scale m scv; a constant m when scv = 0), two-phase hyperexponential with balanced means, Erlang,
  or exponential, each with the class's mean m and scv: the law the exact engine runs on (for gamma, the engine
  runs on a three-moment phase-type fit of it).
- Preemptive discipline: ciw's "resume" (a preempted job later continues with the service it had left): that is
  the preemptive-resume discipline of the analytic formulas, and what a checkpointed training job does. With
  "resample" a preempted job would draw a new size, which changes the work distribution unless it is exponential.
- The run lasts H = jobs_per_replication / (total arrival rate) hours plus a tail of TAIL_FRACTION H; jobs
  arriving in [w, H] are measured, so jobs still in service at H finish in the tail (those that do not are
  counted, `censored`). The warm-up is detected by MSER-5 (White 1997; White, Cobb & Spratt 2000: the truncation
  of the batch means of 5 responses, in arrival order, that minimises their squared error over the square of what
  is kept, searched over the first half) on the replications' average response by arrival index (one replication
  alone would be cut after its excursions and so biased low), the same number of arrivals deleted in each; or a
  fixed warmup_fraction H when given. A truncation at the end of the searched half means the queue did not
  settle (`warmup_at_limit`).
  Utilisation is the class's service time inside [w, H] over c times its length.
- Each replication gives one mean per class; the estimate is their average and the half-width
  t(0.975, R - 1) s / sqrt(R).
- Length: replications of `jobs_per_replication` jobs; while some class's response half-width is above
  `relative_half_width` of its mean and twice the jobs stay within `max_jobs_per_replication`, the replications
  are run again, twice as long (new seeds); the last run's estimates are returned with whether the precision
  was reached.
- Each replication also gives its drift: the mean response of the jobs arriving in the second half of the
  measured window minus that of the first half. A queue that has not settled (near saturation, its relaxation
  time longer than the run) keeps filling up, so its drift is positive beyond noise and its means are not
  steady-state estimates (`SimulationRun.drift`; optsched.queueing.study reads it).

ciw draws from Python's global `random` generator (and sets `ciw.rng`); both are saved and restored around a
run, so a caller's random state is left as it was. Not thread-safe for that reason (the service uses processes).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import version

import ciw
import numpy as np

from optsched.queueing.analytic import QueueClass
from optsched.queueing.phasetype import Law, balanced_p
from optsched.queueing.schema import Discipline

logger = logging.getLogger(__name__)

PREEMPTION = "resume"
SERVICE_DISTRIBUTION = {
    Law.gamma: "gamma (shape 1/scv, scale mean*scv); constant when scv = 0",
    Law.hyperexponential: "two-phase hyperexponential, balanced means",
    Law.erlang: "Erlang (1/scv phases)",
    Law.exponential: "exponential",
}
TAIL_FRACTION = 0.25
MSER_BATCH = 5
# A run whose response half-width is above this share of its mean is run again twice as long (within the budget).
RELATIVE_HALF_WIDTH = 0.05
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
    jobs_per_replication: int = 0  # of the run returned (the last, longest)
    replications: int = 0
    warmup_fraction: float = 0.0  # mean over replications of the warm-up deleted, as a share of H
    warmup_at_limit: int = 0  # replications whose MSER-5 truncation reached the end of the searched half
    censored: int = 0  # measured arrivals still in the system at the end of the tail
    precision_met: bool = True  # every class's response half-width within relative_half_width of its mean
    doublings: int = 0


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


@dataclass(frozen=True, slots=True)
class _Replication:
    sums: list[_Sums]
    halves: _Halves
    warmup: float  # hours deleted
    at_limit: bool
    censored: int


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
    warmup_fraction: float | None = None,
    relative_half_width: float = RELATIVE_HALF_WIDTH,
    max_jobs_per_replication: int | None = None,
) -> SimulationRun:
    """Per-class estimates of mean wait, mean response and utilisation, in input order (stable queues only), and
    the run's drift, warm-up and precision, which tell whether the queue settled and the interval is as narrow
    as asked (see the module's docstring for the doubling)."""
    if replications < 2:
        raise ValueError("replications must be at least 2 for a confidence interval")
    if warmup_fraction is not None and not 0 <= warmup_fraction < 1:
        raise ValueError("warmup_fraction must be in [0, 1)")
    most = max(jobs_per_replication, max_jobs_per_replication or jobs_per_replication)
    jobs, doublings = jobs_per_replication, 0
    root = np.random.SeedSequence(seed)
    while True:
        run = _run(classes, c, discipline, root.spawn(1)[0], replications, jobs, warmup_fraction)
        precise = all(
            k.response.mean is not None
            and k.response.half_width is not None
            and k.response.half_width <= relative_half_width * k.response.mean
            for k in run.classes
        )
        if precise or 2 * jobs > most:
            break
        jobs, doublings = 2 * jobs, doublings + 1
    logger.debug("simulation: %d doublings, %d jobs per replication, precise %s", doublings, jobs, precise)
    return dataclasses.replace(run, precision_met=precise, doublings=doublings)


def _run(
    classes: Sequence[QueueClass], c: int, discipline: Discipline, seeds_from: np.random.SeedSequence,
    replications: int, jobs_per_replication: int, warmup_fraction: float | None,
) -> SimulationRun:
    total_rate = sum(k.rate for k in classes)
    horizon = jobs_per_replication / total_rate
    seeds = seeds_from.generate_state(replications)
    saved_random, saved_rng = random.getstate(), getattr(ciw, "rng", None)
    try:
        raw = [_simulated(classes, c, discipline, int(s), horizon) for s in seeds]
    finally:
        random.setstate(saved_random)
        if saved_rng is not None:
            ciw.rng = saved_rng
    if warmup_fraction is None:
        cut, at_limit = ensemble_warmup(raw)
        warmups = [r.order[cut][1] if cut < len(r.order) else horizon for r in raw]
    else:
        at_limit = False
        warmups = [warmup_fraction * horizon] * len(raw)
    runs = [_measured(r, len(classes), c, horizon, w, at_limit) for r, w in zip(raw, warmups, strict=True)]
    out = []
    for i in range(len(classes)):
        sums = [r.sums[i] for r in runs]
        out.append(
            SimulatedClass(
                wait=_estimate([s.wait / s.jobs for s in sums if s.jobs]),
                response=_estimate([s.response / s.jobs for s in sums if s.jobs]),
                utilization=_estimate([s.busy for s in sums]),
                jobs=sum(s.jobs for s in sums),
            )
        )
    h = [r.halves for r in runs]
    drifts = [x.second - x.first for x in h if x.first is not None and x.second is not None]
    totals = [(sum(x.response for x in r.sums), sum(x.jobs for x in r.sums)) for r in runs]
    return SimulationRun(
        classes=tuple(out),
        drift=_estimate(drifts),
        response=_estimate([response / jobs for response, jobs in totals if jobs]),
        jobs_per_replication=jobs_per_replication,
        replications=len(runs),
        warmup_fraction=math.fsum(r.warmup for r in runs) / len(runs) / horizon,
        warmup_at_limit=sum(r.at_limit for r in runs),  # all or none: one ensemble warm-up
        censored=sum(r.censored for r in runs),
    )


def ensemble_warmup(raw: Sequence[_Raw]) -> tuple[int, bool]:
    """MSER-5 on the replications' average response by arrival index (the i-th arrival of each, up to the
    shortest): the average keeps the start-up transient and averages out the excursions, which MSER-5 on one
    replication would cut (and so bias the mean low)."""
    n = min(len(r.order) for r in raw)
    if n == 0:
        return 0, False
    average = np.mean([[job[2] for job in r.order[:n]] for r in raw], axis=0)
    return mser5(average)


def mser5(values: np.ndarray) -> tuple[int, bool]:
    """MSER-5: the number of leading values to delete (a multiple of 5) and whether the minimum is at the end of
    the searched first half (no steady state within the run)."""
    m = len(values) // MSER_BATCH
    if m < 4:
        return 0, False
    z = values[: m * MSER_BATCH].reshape(m, MSER_BATCH).mean(axis=1)
    # For d = 0..m-1: the kept batches z[d:], their count, sum and sum of squares (suffix sums).
    rev = z[::-1]
    count = np.arange(1, m + 1)[::-1].astype(float)
    total = np.cumsum(rev)[::-1]
    squares = np.cumsum(rev * rev)[::-1]
    sse = squares - total * total / count
    half = m // 2
    stat = sse[: half + 1] / count[: half + 1] ** 2
    d = int(np.argmin(stat))
    return d * MSER_BATCH, d >= half - 1


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
    """The class's declared law at its mean and scv (optsched.queueing.phasetype has the same laws' parameters)."""
    if k.scv == 0:
        return ciw.dists.Deterministic(k.mean)
    if k.law == Law.exponential:
        return ciw.dists.Exponential(1.0 / k.mean)
    if k.law == Law.erlang:
        phases = round(1.0 / k.scv)
        return ciw.dists.Erlang(rate=phases / k.mean, num_phases=phases)
    if k.law == Law.hyperexponential and k.scv > 1.0:
        p = balanced_p(k.scv)
        return ciw.dists.HyperExponential(rates=[2.0 * p / k.mean, 2.0 * (1.0 - p) / k.mean], probs=[p, 1.0 - p])
    if k.law == Law.hyperexponential:
        return ciw.dists.Exponential(1.0 / k.mean)
    return ciw.dists.Gamma(shape=1.0 / k.scv, scale=k.mean * k.scv)


@dataclass(frozen=True)
class _Raw:
    """One replication's records: completed jobs of arrival before H in arrival order (class, arrival, response,
    service received), every service stretch (class, start, end), and the arrival dates still in the system."""

    order: list[tuple[int, float, float, float]]
    intervals: list[tuple[int, float, float]]
    unfinished: list[float]


def _simulated(classes: Sequence[QueueClass], c: int, discipline: Discipline, seed: int, horizon: float) -> _Raw:
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
    done: dict[int, tuple[int, float, float]] = {}  # id -> (class, arrival, response)
    intervals: list[tuple[int, float, float]] = []
    for r in sim.get_all_records(only=["service", "interrupted service"]):
        end = r.exit_date if r.record_type == "interrupted service" else r.service_end_date
        served[r.id_number] = served.get(r.id_number, 0.0) + (end - r.service_start_date)
        k = index[r.original_customer_class]
        intervals.append((k, r.service_start_date, end))
        if r.record_type == "service" and r.arrival_date < horizon:
            done[r.id_number] = (k, r.arrival_date, r.exit_date - r.arrival_date)
    order = sorted(((*done[job], served[job]) for job in done), key=lambda x: x[1])
    unfinished = [ind.arrival_date for n in sim.nodes[1:-1] for ind in n.all_individuals]
    return _Raw(order=order, intervals=intervals, unfinished=unfinished)


def _measured(raw: _Raw, n_classes: int, c: int, horizon: float, warmup: float, at_limit: bool) -> _Replication:
    """The replication's sums over the jobs arriving in [warmup, H)."""
    busy = [0.0] * n_classes
    for k, start, end in raw.intervals:
        busy[k] += max(0.0, min(end, horizon) - max(start, warmup))
    sums = [[0.0, 0.0, 0] for _ in range(n_classes)]
    middle = (warmup + horizon) / 2
    halves: tuple[list[float], list[float]] = ([], [])
    for k, arrival, response, served in raw.order:
        if arrival < warmup:
            continue
        sums[k][0] += response
        sums[k][1] += response - served
        sums[k][2] += 1
        halves[arrival >= middle].append(response)
    window = c * max(horizon - warmup, 1e-12)
    means = [math.fsum(h) / len(h) if h else None for h in halves]
    return _Replication(
        sums=[_Sums(response=x[0], wait=x[1], jobs=int(x[2]), busy=busy[k] / window) for k, x in enumerate(sums)],
        halves=_Halves(first=means[0], second=means[1]),
        warmup=warmup,
        at_limit=at_limit,
        censored=sum(1 for a in raw.unfinished if warmup <= a < horizon),
    )
