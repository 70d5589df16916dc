"""A study's answer: service times from the Amdahl speedup at each class's cap, the caps chosen to minimise mean
power under the response-time targets, the Pareto front of power against response, and the per-class means.

- Service time of a job of class k at cap L: work / S with S = speedup(p, s_L, d s_L) (optsched.model.amdahl: the
  serial part on one device of speed s_L, the parallel part over the d = devices_per_job devices of the server),
  so the mean is work_hours.mean / S and the scv is the work's.
- Mean power (W) = d * sum_k lambda_k m_k * cap_k + (devices - d * sum_k lambda_k m_k) * idle_w: a busy device
  draws its class's cap, every other device (idle servers, and devices left over by floor(count / d)) its idle
  draw. lambda_k m_k is the mean number of servers busy with class k (utilisation times c).
- Cap choice: every combination of the pool's power levels for the classes without cap_w (at most
  MAX_COMBINATIONS) is evaluated analytically; among the stable ones that meet every target the least mean power
  wins (ties: the least arrival-weighted response). With method="simulation" the chosen caps are then simulated;
  the front stays analytic.
- Bounds (issue 25): `check_study` refuses before any work a study above a service's `Limits` (devices, device
  groups, power levels) and a simulation above MAX_SIMULATION_WORK (optsched.schema.limits); the result stores
  at most MAX_FRONT_POINTS points of the front (`front_points` counts them all); a simulation that cannot have
  settled (`unsettled_reason`) is `unsettled`, with no target reported met or missed.
"""

from __future__ import annotations

import itertools
import logging
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optsched.model.amdahl import speedup
from optsched.queueing.analytic import ClassMeans, QueueClass, mean_times, offered_load
from optsched.queueing.exact import ExactBudget, best_means
from optsched.queueing.schema import (
    MAX_CLASSES,
    MAX_COMBINATIONS,
    PRIORITY_RANK,
    ClassResult,
    Discipline,
    FrontPoint,
    Method,
    SimulationInfo,
    Study,
    StudyResult,
    StudyStatus,
    load_study,
)
from optsched.queueing.simulation import (
    PREEMPTION,
    RELATIVE_HALF_WIDTH,
    SERVICE_DISTRIBUTION,
    SimulatedClass,
    SimulationRun,
    ciw_version,
    simulate,
)
from optsched.schema.errors import FieldError, InvalidStudy
from optsched.schema.limits import (
    MAX_FRONT_POINTS,
    MAX_SIMULATION_WORK,
    SIMULATION_JOB_SERVERS,
    Limits,
    device_problems,
    simulation_work,
)

logger = logging.getLogger(__name__)

# A response within this relative margin of its target meets it (floating-point noise, not slack).
TARGET_RTOL = 1e-9
# Simulated arrivals per replication at most (about 7 minutes of ciw per replication).
MAX_JOBS_PER_REPLICATION = 10_000_000
# A simulation shorter than this many relaxation times of its queue has not settled (unsettled_reason).
RELAXATION_RUNS = 3.0
# What a simulation may spend, all its doublings included, unless the caller (a service: its setting) says
# otherwise: about 3 s of one core (MAX_SIMULATION_WORK is the most any caller may allow).
DEFAULT_SIMULATION_WORK = 25_000_000
# A simulation starts with at least this many relaxation times per replication (settle_jobs).
SETTLE_RELAXATIONS = 30.0
# The responses drift upward (the queue is still filling up) when the drift exceeds DRIFT_WIDTHS times its 95 %
# half-width (a false alarm about once in 10,000 settled runs, where one width would be one in 40) and
# DRIFT_RTOL of the mean response (smaller is noise, whatever its interval).
DRIFT_WIDTHS = 2.0
DRIFT_RTOL = 0.1

# The exact check of the cap choice: candidates whose fast figures are within this ratio of every target, at most
# this many (the approximation's error measured in issue 29 is below 30 % of the response).
CANDIDATE_MARGIN = 1.3
MAX_EXACT_CANDIDATES = 20

StudySource = Study | Mapping[str, Any] | str | Path


@dataclass(frozen=True)
class Evaluation:
    """One assignment of caps (W, per class in input order), evaluated analytically."""

    caps: tuple[float, ...]
    queue: tuple[QueueClass, ...]
    servers: int
    load: float
    means: tuple[ClassMeans, ...] | None  # None: unstable
    mean_power_w: float | None

    @property
    def stable(self) -> bool:
        return self.means is not None

    def stable_means(self) -> tuple[ClassMeans, ...]:
        """The per-class means, which only a stable evaluation has."""
        if self.means is None:
            raise ValueError(f"caps {self.caps}: the queue is unstable and has no means")
        return self.means


def queue_classes(study: Study, caps: Sequence[float]) -> tuple[QueueClass, ...]:
    """The M/G/c classes of the study at these caps: level by priority, service mean work / Amdahl speedup."""
    levels = sorted({PRIORITY_RANK[k.priority] for k in study.classes})
    out = []
    for k, cap in zip(study.classes, caps, strict=True):
        s = study.speed_at(cap)
        rate = speedup(k.parallel_fraction, s, k.devices_per_job * s)
        out.append(
            QueueClass(
                level=levels.index(PRIORITY_RANK[k.priority]),
                rate=k.arrival_rate_per_hour,
                mean=k.work_hours.mean / rate,
                scv=k.work_hours.scv,
                law=k.work_hours.distribution,
            )
        )
    return tuple(out)


def mean_power(study: Study, caps: Sequence[float], busy_servers: Sequence[float]) -> float:
    """d * sum_k busy_k cap_k + (devices - d * sum_k busy_k) idle_w, busy_k the mean servers busy with class k (W)."""
    d, idle_w = study.devices_per_job, study.devices[0].idle_w
    busy_devices = d * math.fsum(busy_servers)
    return (
        d * math.fsum(b * cap for b, cap in zip(busy_servers, caps, strict=True))
        + (study.device_count - busy_devices) * idle_w
    )


def evaluate(study: Study, caps: Sequence[float], exact: ExactBudget | None = None) -> Evaluation:
    """The analytic means and mean power of the study at these caps (one per class, in input order): the fast
    formulas (closed forms, else the approximation), or with `exact` the exact engine where they are not exact
    and the budget reaches."""
    queue = queue_classes(study, caps)
    c = study.servers
    load = offered_load(queue)
    if load >= c:
        return Evaluation(tuple(caps), queue, c, load, None, None)
    means = mean_times(queue, c, study.discipline) if exact is None else best_means(queue, c, study.discipline, exact)
    power = mean_power(study, caps, [k.rate * k.mean for k in queue])
    return Evaluation(tuple(caps), queue, c, load, means, power)


def is_exact(e: Evaluation) -> bool:
    """Every class's means of this evaluation come from a closed form or the exact engine."""
    return e.means is not None and all(m.detail.startswith("exact") for m in e.means)


def refined(study: Study, evaluations: Sequence[Evaluation], budget: ExactBudget) -> tuple[Evaluation, ...]:
    """The exact engine's figures for these evaluations, in order, while the study's exact time lasts (those
    it does not reach keep the fast formulas, and say so in their details)."""
    deadline = time.monotonic() + budget.study_s
    out = []
    for e in evaluations:
        if not e.stable or is_exact(e) or time.monotonic() > deadline:
            out.append(e)
            continue
        out.append(evaluate(study, e.caps, budget))
    return tuple(out)


def analyze(
    study: StudySource,
    method: Method | str = Method.analytic,
    seed: int = 0,
    *,
    replications: int = 10,
    jobs_per_replication: int = 10_000,
    warmup_fraction: float | None = None,
    exact: ExactBudget | None = None,
    relative_half_width: float = RELATIVE_HALF_WIDTH,
    max_simulation_work: int = DEFAULT_SIMULATION_WORK,
    study_limits: StudyLimits | None = None,
) -> StudyResult:
    """Per-class mean wait and response, utilisation and mean power of the study; caps chosen where not given.

    InvalidStudy for an invalid document or method; the result's status says whether it is stable and meets the
    targets (an unstable study carries a reason and no waits). A simulation starts at the larger of
    `jobs_per_replication` and SETTLE_RELAXATIONS relaxation times of the queue, and doubles its length until
    every class's response half-width is within `relative_half_width` of its mean or the next doubling would take
    the simulation's whole work past `max_simulation_work` (warm-up: MSER-5 unless `warmup_fraction` is given)."""
    started = time.monotonic()
    s = check_study(
        study, method=method, replications=replications, jobs_per_replication=jobs_per_replication,
        warmup_fraction=warmup_fraction, max_simulation_work=max_simulation_work, study_limits=study_limits,
    )
    if study_limits is not None:
        max_simulation_work = study_limits.simulation_work
    method = Method(method)
    free = [i for i, k in enumerate(s.classes) if k.cap_w is None]
    budget = exact or ExactBudget()
    evaluations = [evaluate(s, caps) for caps in _cap_combinations(s, free)]
    checked: dict[tuple[float, ...], Evaluation] = {}  # caps -> exact evaluation, solved once for choice and front
    best, status, reason = _choose_exact(s, evaluations, budget, checked)
    checked[best.caps] = best
    logger.info("study %r: %d cap combinations evaluated, status %s", s.name, len(evaluations), status.value)
    whole_front = pareto_front(s, evaluations) if free else ()
    front = _exact_front(s, thinned(whole_front, MAX_FRONT_POINTS), checked, budget)
    simulation = None
    power: float | None
    if method == Method.simulation and best.stable:
        most = max_simulation_work // (2 * simulation_work(replications, 1, s.servers))
        settle = settle_jobs(best)
        if settle > most:
            # No run the budget allows can settle: the shortest one asked, flagged unsettled, instead of the longest.
            first = most = jobs_per_replication
        else:
            first = min(max(jobs_per_replication, settle), max(most, jobs_per_replication))
        run = simulate(
            best.queue, best.servers, s.discipline, seed=seed, replications=replications,
            jobs_per_replication=first, warmup_fraction=warmup_fraction,
            relative_half_width=relative_half_width, max_jobs_per_replication=most,
        )
        unsettled = unsettled_reason(best, run, run.jobs_per_replication)
        laws = sorted({k.work_hours.distribution for k in s.classes})
        simulation = SimulationInfo(
            library=ciw_version(), replications=replications, jobs_per_replication=run.jobs_per_replication,
            warmup_fraction=run.warmup_fraction, seed=seed,
            service_distribution="; ".join(SERVICE_DISTRIBUTION[law] for law in laws),
            preemption=PREEMPTION if s.discipline == Discipline.preemptive else None,
            settled=unsettled is None, drift_hours=run.drift.mean, drift_half_width_hours=run.drift.half_width,
            warmup="MSER-5" if warmup_fraction is None else "fixed",
            warmup_at_limit=run.warmup_at_limit, censored_jobs=run.censored,
            relative_half_width=relative_half_width, precision_met=run.precision_met, doublings=run.doublings,
        )
        classes = tuple(
            _simulated_class(s, i, best, run.classes[i], settled=unsettled is None) for i in range(len(s.classes))
        )
        if not run.precision_met and unsettled is None:
            reason = (
                f"the simulation's intervals are wider than asked (±{relative_half_width:.0%} of the mean) after "
                f"{run.doublings} doublings to {run.jobs_per_replication:,} jobs per replication, the most the "
                "work limit allows; a target inside a class's interval is reported neither met nor missed"
            )
        power = mean_power(s, best.caps, [(r.utilization or 0.0) * best.servers for r in classes])
        missed = [r for r in classes if r.meets_target is False]
        if unsettled is not None:
            # Means of a queue still filling up are no estimates: neither targets met nor missed can be read off.
            status, reason = StudyStatus.unsettled, unsettled
        elif missed and status == StudyStatus.ok:
            status, reason = StudyStatus.targets_missed, "simulated " + _misses(missed)
        elif not missed and status == StudyStatus.targets_missed:
            status, reason = StudyStatus.ok, None
    else:
        classes = tuple(_analytic_class(s, i, best) for i in range(len(s.classes)))
        power = best.mean_power_w
    return StudyResult(
        study=s.name,
        discipline=s.discipline,
        method=method,
        status=status,
        stable=best.stable,
        reason=reason,
        device_model=s.model,
        devices=s.device_count,
        devices_per_job=s.devices_per_job,
        servers=s.servers,
        offered_load=best.load,
        mean_power_w=power,
        caps={k.name: cap for k, cap in zip(s.classes, best.caps, strict=True)},
        caps_chosen=tuple(s.classes[i].name for i in free),
        meets_targets=(
            None
            if not s.targets or not best.stable or status == StudyStatus.unsettled or _undecided(classes)
            else all(r.meets_target is not False for r in classes)
        ),
        classes=classes,
        front=front,
        front_points=len(whole_front),
        combinations_evaluated=len(evaluations),
        simulation=simulation,
        wall_seconds=time.monotonic() - started,
    )


@dataclass(frozen=True)
class StudyLimits:
    """What one study may ask beyond a plan's `Limits` (a service's OPTSCHED_QUEUEING_* settings): classes, cap
    combinations evaluated (the work of the front, whose stored points MAX_FRONT_POINTS bounds), and a
    simulation's work (replications x jobs x (servers + SIMULATION_JOB_SERVERS), all its doublings included)."""

    classes: int = MAX_CLASSES
    combinations: int = MAX_COMBINATIONS
    simulation_work: int = MAX_SIMULATION_WORK


def check_study(
    study: StudySource,
    *,
    limits: Limits | None = None,
    method: Method | str = Method.analytic,
    replications: int = 10,
    jobs_per_replication: int = 10_000,
    warmup_fraction: float | None = None,
    max_simulation_work: int = MAX_SIMULATION_WORK,
    study_limits: StudyLimits | None = None,
) -> Study:
    """The study, after every check `analyze` makes before any work, for a service to call before it queues one:
    the document, the options, the study's size against `limits` (devices, device groups, power levels: a plan's
    limits) and `study_limits` (classes, cap combinations), and a simulation's first run (replications x jobs x
    servers) against the work limit. InvalidStudy (an InvalidWorkload) names every field at fault."""
    s = load_study(study)
    bounds = study_limits or StudyLimits(simulation_work=max_simulation_work)
    problems = _option_problems(method, replications, jobs_per_replication, warmup_fraction)
    if limits is not None:
        problems.extend(device_problems(s.devices, limits))
    if len(s.classes) > bounds.classes:
        problems.append(
            FieldError("classes", f"{len(s.classes)} classes, above the limit of {bounds.classes} "
                       "(OPTSCHED_QUEUEING_MAX_CLASSES)")
        )
    free = sum(1 for k in s.classes if k.cap_w is None)
    combinations = len(s.levels) ** free
    if combinations > bounds.combinations:
        problems.append(
            FieldError(
                "classes",
                f"{free} classes without cap_w x {len(s.levels)} power levels = {combinations:,} cap combinations "
                f"(each a point the front may hold), above the limit of {bounds.combinations:,} "
                "(OPTSCHED_QUEUEING_MAX_COMBINATIONS); set cap_w on some classes",
            )
        )
    work = simulation_work(replications, jobs_per_replication, s.servers)
    if method == Method.simulation and not problems and work > bounds.simulation_work:
        problems.append(
            FieldError(
                "jobs_per_replication",
                f"{replications:,} replications x {jobs_per_replication:,} jobs x ({s.servers:,} servers + "
                f"{SIMULATION_JOB_SERVERS}) = {work:,} units of simulation work, above the limit of "
                f"{bounds.simulation_work:,} (OPTSCHED_QUEUEING_MAX_SIMULATION_WORK); simulate fewer jobs or "
                "replications, or use the analytic method",
            )
        )
    if problems:
        raise InvalidStudy(problems)
    return s


def _option_problems(
    method: Method | str, replications: int, jobs: int, warmup_fraction: float | None
) -> list[FieldError]:
    """Every option out of range, at its name."""
    problems = []
    if method not in {m.value for m in Method}:
        problems.append(FieldError("method", f"unknown method {method!r}; choose one of {[m.value for m in Method]}"))
    if not 2 <= replications <= 10_000:
        problems.append(
            FieldError("replications", f"{replications} is not in 2..10,000 (a confidence interval needs two)")
        )
    if not 100 <= jobs <= MAX_JOBS_PER_REPLICATION:
        problems.append(FieldError("jobs_per_replication", f"{jobs} is not in 100..{MAX_JOBS_PER_REPLICATION:,}"))
    if warmup_fraction is not None and not 0 <= warmup_fraction < 1:
        problems.append(FieldError("warmup_fraction", f"{warmup_fraction} is not in [0, 1)"))
    return problems


def relaxation_hours(e: Evaluation) -> float:
    """The queue's relaxation time, the M/M/c heavy-traffic m / (c (1 - sqrt(rho))^2), m the mean service and rho
    the load per server, in hours."""
    service = e.load / math.fsum(k.rate for k in e.queue)
    return service / (e.servers * (1.0 - math.sqrt(e.load / e.servers)) ** 2)


def settle_jobs(e: Evaluation) -> int:
    """SETTLE_RELAXATIONS relaxation times of the queue, in arrivals."""
    rate = math.fsum(k.rate for k in e.queue)
    return int(min(SETTLE_RELAXATIONS * relaxation_hours(e) * rate, MAX_JOBS_PER_REPLICATION))


def unsettled_reason(e: Evaluation, run: SimulationRun, jobs_per_replication: int) -> str | None:
    """Why the simulated queue cannot have reached a steady state, or None when nothing says so.

    Two signs: (1) the run is shorter than RELAXATION_RUNS relaxation times of the queue, estimated as the M/M/c
    heavy-traffic m / (c (1 - sqrt(rho))^2) with m the mean service and rho the load per server (at load
    0.999999 on one server, 4e12 service times: 10,000 jobs cannot tell); (2) the responses drift upward: the
    second half of the measured window responds slower than the first by more than DRIFT_WIDTHS times the drift's
    95 % half-width and more than DRIFT_RTOL of the mean response; (3) in more than half the replications MSER-5
    found no warm-up within the first half of the run."""
    rho = e.load / e.servers
    horizon = jobs_per_replication / math.fsum(k.rate for k in e.queue)
    relaxation = relaxation_hours(e)
    if horizon < RELAXATION_RUNS * relaxation:
        return (
            f"the simulation did not settle: at load {rho:.6g} per server the queue relaxes in about "
            f"{relaxation:.4g} h, and the run lasts {horizon:.4g} h ({jobs_per_replication:,} jobs), under "
            f"{RELAXATION_RUNS} relaxation times; its means are not steady-state estimates (the analytic figures "
            "are; or lower the load)"
        )
    if 2 * run.warmup_at_limit > run.replications:
        return (
            f"the simulation did not settle: in {run.warmup_at_limit} of {run.replications} replications the "
            "MSER-5 warm-up reached the end of the half it searches (the responses still trend at mid-run); its "
            "means are not steady-state estimates (the analytic figures are)"
        )
    drift, response = run.drift, run.response
    if (
        drift.mean is not None
        and drift.half_width is not None
        and response.mean is not None
        and drift.mean > DRIFT_WIDTHS * drift.half_width
        and drift.mean > DRIFT_RTOL * response.mean
    ):
        return (
            f"the simulation did not settle: responses rose by {drift.mean:.4g} ± {drift.half_width:.2g} h from the "
            f"first half of the measured window to the second (mean response {response.mean:.4g} h); simulate more "
            "jobs per replication or use the analytic figures"
        )
    return None


def thinned(front: tuple[FrontPoint, ...], most: int) -> tuple[FrontPoint, ...]:
    """At most `most` points of the front: all of them, or its two ends and points evenly spaced between."""
    if len(front) <= most:
        return front
    picks = sorted({round(k * (len(front) - 1) / (most - 1)) for k in range(most)})
    return tuple(front[i] for i in picks)


def _cap_combinations(study: Study, free: list[int]) -> list[tuple[float, ...]]:
    """Every assignment of the pool's levels to the classes in `free` (the others keep cap_w), highest caps first."""
    out: list[tuple[float, ...]] = []
    for chosen in itertools.product(study.levels, repeat=len(free)):
        picked = dict(zip(free, chosen, strict=True))
        out.append(tuple(k.cap_w if k.cap_w is not None else picked[i] for i, k in enumerate(study.classes)))
    return out


def _choose_exact(
    study: Study, evaluations: list[Evaluation], budget: ExactBudget, checked: dict[tuple[float, ...], Evaluation]
) -> tuple[Evaluation, StudyStatus, str | None]:
    """The choice on the fast formulas, then checked with the exact engine: the candidates the fast formulas put
    within CANDIDATE_MARGIN of every target are evaluated exactly by rising power (at most MAX_EXACT_CANDIDATES,
    within the study's exact time) and the first that meets every target exactly is chosen; else the fast choice,
    its figures exact where the budget reaches. The exact evaluations are kept in `checked` by caps."""
    best, status, reason = _choose(study, evaluations)
    if not best.stable:
        return best, status, reason
    if not study.targets:
        return _choose(study, list(refined(study, [best], budget)))
    near = sorted(
        (e for e in evaluations if e.stable and _worst_ratio(study, e) <= CANDIDATE_MARGIN),
        key=lambda e: (e.mean_power_w, weighted_response(e)),
    )[:MAX_EXACT_CANDIDATES]
    deadline = time.monotonic() + budget.study_s
    for e in near:
        if time.monotonic() > deadline:
            break
        x = checked[e.caps] = evaluate(study, e.caps, budget)
        if _worst_ratio(study, x) <= 1.0 + TARGET_RTOL:
            return x, StudyStatus.ok, None
    if checked:
        return _choose(study, list(checked.values()))
    return _choose(study, list(refined(study, [best], budget)))


def _exact_front(
    study: Study, front: tuple[FrontPoint, ...], checked: dict[tuple[float, ...], Evaluation], budget: ExactBudget
) -> tuple[FrontPoint, ...]:
    """The stored front's points with the exact engine's responses where its time reaches (each point says
    whether its figures are exact); the evaluations `checked` already holds (the chosen caps' among them) are
    reused."""
    deadline = time.monotonic() + budget.study_s
    out = []
    for point in front:
        caps = tuple(point.caps[k.name] for k in study.classes)
        if caps in checked:
            e = checked[caps]
        elif time.monotonic() > deadline:
            out.append(point)
            continue
        else:
            e = evaluate(study, caps, budget)
        out.append(_front_point(study, e))
    return tuple(out)


def _choose(study: Study, evaluations: list[Evaluation]) -> tuple[Evaluation, StudyStatus, str | None]:
    """Least mean power among stable evaluations meeting every target; else the closest stable one; else the
    least loaded one, unstable."""
    stable = [e for e in evaluations if e.stable]
    if not stable:
        least = min(evaluations, key=lambda e: e.load)
        at = "at the given caps" if len(evaluations) == 1 else "even at the fastest caps"
        return least, StudyStatus.unstable, (
            f"offered load {least.load:.4g} servers >= {least.servers} servers ({study.device_count} {study.model} "
            f"devices, {study.devices_per_job} per job) {at}: the queue grows without bound; add devices, lower "
            "arrival rates or shorten the work"
        )
    feasible = [e for e in stable if _worst_ratio(study, e) <= 1.0 + TARGET_RTOL]
    if feasible:
        return min(feasible, key=lambda e: (e.mean_power_w, weighted_response(e))), StudyStatus.ok, None
    closest = min(stable, key=lambda e: (_worst_ratio(study, e), e.mean_power_w))
    misses = [
        f"{k.name} {m.response:.4g} h > target {study.targets[k.name].mean_response_hours:g} h"
        for k, m in zip(study.classes, closest.stable_means(), strict=True)
        if k.name in study.targets and not _meets(m.response, study.targets[k.name].mean_response_hours)
    ]
    what = "the given caps miss" if len(evaluations) == 1 else "no caps meet every target; the closest misses"
    return closest, StudyStatus.targets_missed, f"{what}: {'; '.join(misses)}"


def _meets(response: float, target: float) -> bool:
    return response <= target * (1.0 + TARGET_RTOL)


def _worst_ratio(study: Study, e: Evaluation) -> float:
    """max over targeted classes of response / target (0 without targets)."""
    ratios = [
        m.response / study.targets[k.name].mean_response_hours
        for k, m in zip(study.classes, e.stable_means(), strict=True)
        if k.name in study.targets
    ]
    return max(ratios, default=0.0)


def _misses(classes: Sequence[ClassResult]) -> str:
    """'name mean ± half-width h > target T h' for each class; the interval tells noise from a real miss."""
    return "; ".join(
        f"{r.name} {r.mean_response_hours:.4g}"
        + (f" ± {r.response_half_width_hours:.2g}" if r.response_half_width_hours is not None else "")
        + f" h > target {r.target_response_hours:g} h"
        for r in classes
    )


def weighted_response(e: Evaluation) -> float:
    """Arrival-weighted mean response over all classes (h)."""
    means = e.stable_means()
    return math.fsum(k.rate * m.response for k, m in zip(e.queue, means, strict=True)) / math.fsum(
        k.rate for k in e.queue
    )


def high_priority_response(e: Evaluation) -> float:
    """Arrival-weighted mean response of the classes at the top priority level (h)."""
    top = [(k, m) for k, m in zip(e.queue, e.stable_means(), strict=True) if k.level == 0]
    return math.fsum(k.rate * m.response for k, m in top) / math.fsum(k.rate for k, _ in top)


def pareto_front(study: Study, evaluations: Sequence[Evaluation]) -> tuple[FrontPoint, ...]:
    """Stable evaluations that no other beats on both mean power and high-priority response, by rising power."""
    stable = sorted((e for e in evaluations if e.stable), key=lambda e: (e.mean_power_w, high_priority_response(e)))
    front: list[FrontPoint] = []
    best = math.inf
    for e in stable:
        top = high_priority_response(e)
        if top < best * (1.0 - 1e-12):
            best = top
            front.append(_front_point(study, e))
    return tuple(front)


def _front_point(study: Study, e: Evaluation) -> FrontPoint:
    assert e.mean_power_w is not None
    return FrontPoint(
        caps={k.name: cap for k, cap in zip(study.classes, e.caps, strict=True)},
        mean_power_w=e.mean_power_w,
        high_priority_response_hours=high_priority_response(e),
        weighted_response_hours=weighted_response(e),
        response_hours={k.name: m.response for k, m in zip(study.classes, e.stable_means(), strict=True)},
        meets_targets=_worst_ratio(study, e) <= 1.0 + TARGET_RTOL,
        exact=is_exact(e),
    )


def _target(study: Study, name: str) -> float | None:
    t = study.targets.get(name)
    return None if t is None else t.mean_response_hours


def _analytic_class(study: Study, i: int, e: Evaluation) -> ClassResult:
    k, q = study.classes[i], e.queue[i]
    target = _target(study, k.name)
    m = e.means[i] if e.means is not None else None
    return ClassResult(
        name=k.name,
        priority=k.priority,
        cap_w=e.caps[i],
        arrival_rate_per_hour=q.rate,
        service_mean_hours=q.mean,
        service_scv=q.scv,
        utilization=None if m is None else q.rate * q.mean / e.servers,
        mean_wait_hours=None if m is None else m.wait,
        mean_response_hours=None if m is None else m.response,
        mean_number_in_system=None if m is None else (m.number_in_system or q.rate * m.response),
        truncated_mass=None if m is None else m.truncated_mass,
        method_detail=m.detail if m is not None else "unstable: no steady state",
        target_response_hours=target,
        meets_target=None if m is None or target is None else _meets(m.response, target),
    )


def _undecided(classes: Sequence[ClassResult]) -> bool:
    """Some class has a target its simulated interval contains (neither met nor missed)."""
    return any(r.target_response_hours is not None and r.meets_target is None for r in classes)


def _simulated_verdict(
    response: float | None, half_width: float | None, target: float | None, *, settled: bool
) -> bool | None:
    """Met or missed only when the whole 95 % interval is on one side of the target (None: the run cannot tell,
    or there is no target, or the queue did not settle)."""
    if target is None or response is None or not settled:
        return None
    width = half_width or 0.0
    if _meets(response + width, target):
        return True
    if not _meets(response - width, target):
        return False
    return None


def _simulated_class(study: Study, i: int, e: Evaluation, sim: SimulatedClass, *, settled: bool) -> ClassResult:
    k, q = study.classes[i], e.queue[i]
    target = _target(study, k.name)
    response = sim.response.mean
    return ClassResult(
        name=k.name,
        priority=k.priority,
        cap_w=e.caps[i],
        arrival_rate_per_hour=q.rate,
        service_mean_hours=q.mean,
        service_scv=q.scv,
        utilization=sim.utilization.mean,
        mean_wait_hours=sim.wait.mean,
        mean_response_hours=response,
        wait_half_width_hours=sim.wait.half_width,
        response_half_width_hours=sim.response.half_width,
        method_detail=f"simulation: {ciw_version()}, {sim.jobs} jobs measured"
        + ("" if settled else ", not settled (no steady-state estimate)"),
        target_response_hours=target,
        meets_target=_simulated_verdict(response, sim.response.half_width, target, settled=settled),
    )
