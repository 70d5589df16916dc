"""Issue 25: a study's cost is bounded before any work (devices, a simulation's work) and its result in size (the
front), and a simulation that cannot have settled says so instead of reporting targets met or missed."""

from __future__ import annotations

import time

import pytest

from optsched.queueing import StudyStatus, analyze, check_study, load_study
from optsched.queueing.exact import ExactBudget
from optsched.queueing.simulation import Estimate, SimulationRun
from optsched.queueing.study import evaluate, unsettled_reason
from optsched.schema.errors import InvalidStudy
from optsched.schema.limits import MAX_FRONT_POINTS, Limits
from tests.queueing.queueing_factories import klass, study

LIMITS = Limits(devices=10_000, device_groups=1_000, levels=32)
TEN_LEVELS = [(100.0 - 7 * i, 1.0 - 0.06 * i) for i in range(10)]


def paths(exc: InvalidStudy) -> list[str]:
    return [e.path for e in exc.errors]


def test_a_simulation_near_saturation_reports_no_target_met_or_missed():
    # Load 0.999999 on one server: the analysis says 1e6 h; 2 x 2,000 jobs would have said a few hours, "met".
    doc = study([klass("a", "high", 0.999999, 1.0)], targets={"a": 20.0})
    result = analyze(doc, method="simulation", replications=2, jobs_per_replication=2_000)
    assert result.status == StudyStatus.unsettled and result.meets_targets is None
    assert result.simulation is not None and result.simulation.settled is False
    assert all(k.meets_target is None and "not settled" in k.method_detail for k in result.classes)
    assert result.reason is not None and "did not settle" in result.reason and "relaxes in about" in result.reason
    assert analyze(doc).status == StudyStatus.targets_missed  # the analysis


@pytest.mark.slow
def test_a_settled_simulation_says_so():
    doc = study([klass("a", "high", 0.5, 1.0)], targets={"a": 20.0})
    result = analyze(doc, method="simulation", replications=4, jobs_per_replication=4_000)
    assert result.status == StudyStatus.ok and result.meets_targets is True
    assert result.simulation is not None and result.simulation.settled is True
    assert result.simulation.drift_half_width_hours is not None


def test_an_upward_drift_beyond_noise_is_unsettled():
    e = evaluate(load_study(study([klass("a", "high", 0.5, 1.0)])), [100.0])
    flat = SimulationRun(classes=(), drift=Estimate(0.1, 0.3), response=Estimate(2.0, 0.1))
    rising = SimulationRun(classes=(), drift=Estimate(1.5, 0.4), response=Estimate(2.0, 0.1))
    small = SimulationRun(classes=(), drift=Estimate(0.1, 0.01), response=Estimate(2.0, 0.1))  # < 10 % of 2 h
    assert unsettled_reason(e, flat, 10_000) is None
    assert unsettled_reason(e, small, 10_000) is None
    reason = unsettled_reason(e, rising, 10_000)
    assert reason is not None and "responses rose by 1.5" in reason


def test_devices_of_a_study_are_held_to_the_service_limit():
    doc = study([klass("a", "high", 0.5, 1.0)], count=1_000_000)
    with pytest.raises(InvalidStudy) as info:
        check_study(doc, limits=LIMITS)
    assert paths(info.value) == ["devices"] and "OPTSCHED_MAX_DEVICES" in str(info.value)
    check_study(study([klass("a", "high", 0.5, 1.0)], count=10_000), limits=LIMITS)


def test_a_simulation_on_a_million_devices_is_refused_before_it_starts():
    doc = study([klass("a", "high", 0.5, 1.0)], count=1_000_000)
    started = time.process_time()
    with pytest.raises(InvalidStudy) as info:
        analyze(doc, method="simulation")
    assert paths(info.value) == ["jobs_per_replication"] and "units of simulation work" in str(info.value)
    assert time.process_time() - started < 5  # refused, not simulated (305 s before)
    assert analyze(doc).status == StudyStatus.ok  # the analysis is cheap at any size


@pytest.mark.slow
def test_the_stored_front_is_bounded_and_keeps_its_ends():
    # Four classes of one level without caps on ten levels: 9,927 Pareto points before the bound.
    classes = [
        klass(f"c{i}", "critical", 0.1 + 0.07 * i, 0.5 + 0.31 * i, cap_w=None, p=0.3 + 0.1 * i) for i in range(4)
    ]
    result = analyze(study(classes, servers=8, levels=TEN_LEVELS), exact=ExactBudget(study_s=1.0))
    assert result.front_points > MAX_FRONT_POINTS and len(result.front) == MAX_FRONT_POINTS
    powers = [p.mean_power_w for p in result.front]
    assert powers == sorted(powers)
    whole = analyze(study(classes[:2], servers=8, levels=TEN_LEVELS), exact=ExactBudget(study_s=1.0))
    assert len(whole.front) == whole.front_points <= MAX_FRONT_POINTS
    assert len(result.model_dump_json()) < 200_000  # 18.6 MB for a front of 9,990 points before
