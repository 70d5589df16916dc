"""The analytic method against textbook closed forms written out here independently (to 1e-6), the cap choice
against exhaustive search by hand, and properties of random stable studies."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from optsched.queueing import StudyStatus, analyze, evaluate, load_study
from optsched.queueing.exact import ExactBudget
from optsched.schema.errors import InvalidStudy
from tests.queueing.queueing_factories import klass, study

TOL = 1e-6
# The fast formulas' properties, with the exact engine limited to small chains (hypothesis draws many studies).
# Small chains, by count alone: under load a clock could stop one of the two studies' exact engine and not the
# other, and the two answers would come from different methods (seen under a busy make test: the busier study's
# QBD of 1,332 phases stopped at 10 s and its truncated chain answered 0.716 h against 0.739 h for the base).
FAST = ExactBudget(max_states=2_000, max_phases=300, time_s=3_600.0, study_s=3_600.0)


def erlang_c_by_definition(c: int, a: float) -> float:
    """P(wait) in M/M/c: (a^c / c!) (c / (c - a)) / (sum_{n<c} a^n / n! + (a^c / c!) (c / (c - a)))."""
    top = a**c / math.factorial(c) * c / (c - a)
    return top / (sum(a**n / math.factorial(n) for n in range(c)) + top)


def mmc_number_in_system(c: int, rate: float, mu: float) -> float:
    """L = a + C(c, a) a / (c - a), a = rate / mu (M/M/c FCFS)."""
    a = rate / mu
    return a + erlang_c_by_definition(c, a) * a / (c - a)


def responses(result) -> list[float]:
    return [k.mean_response_hours for k in result.classes]


@pytest.mark.parametrize("c,rate,mu", [(1, 0.7, 1.0), (3, 2.1, 1.0), (8, 7.6, 1.0), (4, 1.5, 0.5)])
def test_one_class_is_the_erlang_c_queue(c, rate, mu):
    result = analyze(study([klass("a", "normal", rate, 1 / mu)], servers=c))
    expected_wait = erlang_c_by_definition(c, rate / mu) / (c * mu - rate)
    (k,) = result.classes
    assert k.mean_wait_hours == pytest.approx(expected_wait, rel=TOL, abs=TOL)
    assert k.mean_response_hours == pytest.approx(expected_wait + 1 / mu, rel=TOL)
    assert k.utilization == pytest.approx(rate / (c * mu), rel=TOL)
    assert k.method_detail.startswith("exact")


@pytest.mark.parametrize("c", [1, 2, 5])
def test_two_class_non_preemptive_priority_is_cobham(c):
    mu, l1, l2 = 1.0, 0.35 * c, 0.45 * c
    result = analyze(study([klass("hi", "high", l1, 1 / mu), klass("lo", "low", l2, 1 / mu)], servers=c))
    s1, s2 = l1 / (c * mu), (l1 + l2) / (c * mu)
    w0 = erlang_c_by_definition(c, (l1 + l2) / mu) / (c * mu)
    assert [k.mean_wait_hours for k in result.classes] == pytest.approx(
        [w0 / (1 - s1), w0 / ((1 - s1) * (1 - s2))], rel=TOL
    )
    assert all(k.method_detail.startswith("exact") for k in result.classes)


def test_three_class_non_preemptive_priority_is_cobham_in_input_order():
    c, mu, rates = 3, 2.0, [1.0, 2.0, 1.5]
    classes = [
        klass("lo", "low", rates[2], 1 / mu),
        klass("hi", "critical", rates[0], 1 / mu),
        klass("mid", "normal", rates[1], 1 / mu),
    ]
    result = analyze(study(classes, servers=c))
    w0 = erlang_c_by_definition(c, sum(rates) / mu) / (c * mu)
    sigma = [0.0] + list(itertools.accumulate(r / (c * mu) for r in rates))
    expected = [w0 / ((1 - sigma[k]) * (1 - sigma[k + 1])) for k in range(3)]
    got = {k.name: k.mean_wait_hours for k in result.classes}
    assert [got["hi"], got["mid"], got["lo"]] == pytest.approx(expected, rel=TOL)


def test_preemptive_mm1_with_unequal_means_is_the_textbook_formula():
    """T_k = ((1/mu_k)(1 - s_k) + sum_{i<=k} lambda_i / mu_i^2) / ((1 - s_k-1)(1 - s_k)) (Kleinrock, vol. 2)."""
    rates, means = [0.3, 0.2, 0.1], [0.5, 1.0, 2.0]
    classes = [
        klass(n, p, r, m) for n, p, r, m in zip(["a", "b", "c"], ["critical", "high", "low"], rates, means, strict=True)
    ]
    result = analyze(study(classes, servers=1, discipline="preemptive"))
    s = [0.0] + list(itertools.accumulate(r * m for r, m in zip(rates, means, strict=True)))
    expected = [
        (means[k] * (1 - s[k + 1]) + sum(rates[i] * means[i] ** 2 for i in range(k + 1)))
        / ((1 - s[k]) * (1 - s[k + 1]))
        for k in range(3)
    ]
    assert responses(result) == pytest.approx(expected, rel=TOL)
    assert all(k.method_detail.startswith("exact") for k in result.classes)


def test_preemptive_mm1_with_equal_means_is_the_simple_form():
    """T_k = (1/mu) / ((1 - s_k-1)(1 - s_k)) when every class has the same exponential service."""
    mu, rates = 2.0, [0.5, 0.7]
    result = analyze(
        study([klass("a", "high", rates[0], 1 / mu), klass("b", "low", rates[1], 1 / mu)], discipline="preemptive")
    )
    s1, s2 = rates[0] / mu, sum(rates) / mu
    assert responses(result) == pytest.approx([1 / mu / (1 - s1), 1 / mu / ((1 - s1) * (1 - s2))], rel=TOL)


@pytest.mark.parametrize("c", [2, 4])
def test_preemptive_mmc_with_equal_means_aggregates_the_higher_classes(c):
    """Classes 1..k form an M/M/c queue: lambda_k T_k = L(1..k) - L(1..k-1) by Little's law."""
    mu, rates = 1.0, [0.3 * c, 0.25 * c, 0.3 * c]
    classes = [
        klass(n, p, r, 1 / mu) for n, p, r in zip(["a", "b", "c"], ["critical", "high", "normal"], rates, strict=True)
    ]
    result = analyze(study(classes, servers=c, discipline="preemptive"))
    upto = list(itertools.accumulate(rates))
    numbers = [0.0] + [mmc_number_in_system(c, lam, mu) for lam in upto]
    expected = [(numbers[k + 1] - numbers[k]) / rates[k] for k in range(3)]
    assert responses(result) == pytest.approx(expected, rel=TOL)
    assert all(k.method_detail.startswith("exact") for k in result.classes)


def test_mg1_non_preemptive_is_pollaczek_khinchine_for_any_scv():
    rate, mean, scv = 0.6, 1.0, 4.0
    result = analyze(study([klass("a", "normal", rate, mean, scv)]))
    expected = rate * mean**2 * (1 + scv) / (2 * (1 - rate * mean))
    assert result.classes[0].mean_wait_hours == pytest.approx(expected, rel=TOL)
    assert result.classes[0].method_detail.startswith("exact")


@pytest.mark.slow
@pytest.mark.parametrize("discipline", ["non_preemptive", "preemptive"])
def test_multi_server_general_service_beyond_the_exact_budget_is_labelled_an_approximation(discipline):
    doc = study([klass("a", "high", 0.5, 1.0, 4.0), klass("b", "low", 0.5, 1.0, 4.0)], servers=2, discipline=discipline)
    result = analyze(doc, exact=ExactBudget(max_states=10))
    low = result.classes[1]
    assert low.method_detail.startswith("approximation: Bondi & Buzen")
    assert "error measured in issue 29" in low.method_detail and "exact engine: the QBD" in low.method_detail
    assert "the truncated chain: the chain" in low.method_detail
    exact = analyze(doc)  # the default budget reaches this chain
    assert all(k.method_detail.startswith("exact: matrix-geometric (QBD)") for k in exact.classes)


def test_approximation_at_scv_one_and_equal_means_meets_the_exact_non_preemptive_formula():
    """The Bondi-Buzen scaling reproduces Cobham's M/M/c formula, so the labels change but not the numbers."""
    exp = analyze(study([klass("a", "high", 1.0, 1.0), klass("b", "low", 1.0, 1.0)], servers=3))
    near_doc = study([klass("a", "high", 1.0, 1.0, 1.0 + 1e-9), klass("b", "low", 1.0, 1.0)], servers=3)
    near = analyze(near_doc, exact=ExactBudget(max_states=10))
    assert responses(near) == pytest.approx(responses(exp), rel=1e-8)
    assert near.classes[0].method_detail.startswith("approximation")


def test_service_time_is_work_over_the_amdahl_speedup_of_a_server():
    """d = 2 devices of speed 1.68 at 400 W, p = 0.9: S = 1 / ((1 - p) / s + p / (2 s))."""
    doc = study(
        [klass("a", "high", 0.5, 3.0, p=0.9, d=2, cap_w=400.0)], levels=[(400.0, 1.68), (200.0, 1.025)], count=5
    )
    result = analyze(doc)
    s = 1 / (0.1 / 1.68 + 0.9 / (2 * 1.68))
    m = 3.0 / s
    assert result.classes[0].service_mean_hours == pytest.approx(m, rel=1e-12)
    assert result.servers == 2 and result.devices == 5
    # 0.5 m servers busy = m devices at 400 W; the other 5 - m devices (the fifth never used) idle at 10 W.
    assert result.mean_power_w == pytest.approx(m * 400 + (5 - m) * 10, rel=1e-12)


def test_mean_power_is_idle_draw_plus_each_class_cap_while_busy():
    """Busy servers: a 1 x 1 h at 100 W, b 0.8 x 1.25 h at 60 W (speed 0.8); 5 one-device servers, idle 10 W."""
    doc = study([klass("a", "high", 1.0, 1.0, cap_w=100.0), klass("b", "low", 0.8, 1.0, cap_w=60.0)], servers=5)
    result = analyze(doc)
    assert result.mean_power_w == pytest.approx(1.0 * 100 + 1.0 * 60 + (5 - 2.0) * 10, rel=1e-12)
    assert [k.utilization for k in result.classes] == pytest.approx([0.2, 0.2], rel=1e-12)


@pytest.mark.parametrize("rate", [1.0, 1.2])
def test_load_at_or_above_capacity_is_unstable_with_a_reason_and_no_numbers(rate):
    result = analyze(study([klass("a", "high", rate, 1.0)]))
    assert result.status == StudyStatus.unstable and not result.stable
    assert "offered load" in result.reason and ">= 1 servers" in result.reason
    assert result.mean_power_w is None
    assert all(
        k.mean_wait_hours is None and k.mean_response_hours is None and k.utilization is None for k in result.classes
    )


def hand_preemptive_mm1(caps):
    """Exhaustive search by hand for test_caps_*: M/M/1 preemptive, levels (100 W, 1.0), (60 W, 0.8), idle 10 W."""
    speed = {100.0: 1.0, 60.0: 0.8}
    m1, m2 = 1 / speed[caps[0]], 1 / speed[caps[1]]
    r1, r2 = 0.3 * m1, 0.3 * m2
    t1 = m1 / (1 - r1)
    power = r1 * caps[0] + r2 * caps[1] + (1 - r1 - r2) * 10.0
    return t1, power


def test_caps_minimise_mean_power_under_the_targets_by_exhaustive_search():
    doc = study([klass("hi", "high", 0.3, 1.0, cap_w=None), klass("lo", "low", 0.3, 1.0, cap_w=None)],
                discipline="preemptive", targets={"hi": 1.5})
    result = analyze(doc)
    candidates = [(hand_preemptive_mm1(caps)[1], caps) for caps in itertools.product([100.0, 60.0], repeat=2)
                  if hand_preemptive_mm1(caps)[0] <= 1.5]
    power, caps = min(candidates)
    assert (result.caps["hi"], result.caps["lo"]) == caps == (100.0, 60.0)
    assert result.mean_power_w == pytest.approx(power, rel=1e-12) and power == pytest.approx(55.75)
    assert result.status == StudyStatus.ok and result.meets_targets is True
    assert result.caps_chosen == ("hi", "lo") and result.combinations_evaluated == 4
    # The front: (47.5 W, 2.0 h) at 60/60 and (55.75 W, 1.4286 h) at 100/60; 60/100 and 100/100 are dominated.
    assert [(round(p.mean_power_w, 6), round(p.high_priority_response_hours, 4)) for p in result.front] == [
        (47.5, 2.0),
        (55.75, 1.4286),
    ]
    assert [p.meets_targets for p in result.front] == [False, True]


def test_no_caps_meeting_the_targets_reports_the_closest_and_why():
    doc = study([klass("hi", "high", 0.3, 1.0, cap_w=None), klass("lo", "low", 0.3, 1.0, cap_w=None)],
                discipline="preemptive", targets={"hi": 1.2})
    result = analyze(doc)
    assert result.status == StudyStatus.targets_missed and result.meets_targets is False and result.stable
    assert result.caps["hi"] == 100.0 and "hi 1.429 h > target 1.2 h" in result.reason


def test_given_caps_are_kept_and_give_no_front():
    result = analyze(study([klass("hi", "high", 0.3, 1.0, cap_w=60.0)]))
    assert result.caps == {"hi": 60.0} and result.caps_chosen == () and result.front == ()


def test_front_is_non_dominated_and_covers_every_stable_combination():
    doc = study(
        [
            klass("a", "high", 0.8, 1.0, 4.0, cap_w=None),
            klass("b", "normal", 0.6, 1.5, cap_w=None),
            klass("c", "low", 0.5, 2.0, 0.5, cap_w=None),
        ],
        servers=3,
        levels=[(100.0, 1.0), (80.0, 0.95), (60.0, 0.8)],
    )
    result = analyze(doc)
    front = [(p.mean_power_w, p.high_priority_response_hours) for p in result.front]
    assert front == sorted(front) and all(b[1] < a[1] for a, b in itertools.pairwise(front))
    s = load_study(doc)
    for caps in itertools.product([100.0, 80.0, 60.0], repeat=3):
        e = evaluate(s, caps)
        if e.stable:
            top = e.means[0].response
            assert any(p <= e.mean_power_w + 1e-9 and r <= top + 1e-12 for p, r in front), caps


def test_too_many_cap_combinations_are_refused():
    classes = [klass(f"k{i}", "normal", 0.01, 1.0, cap_w=None) for i in range(14)]
    with pytest.raises(InvalidStudy) as info:
        analyze(study(classes, servers=4))
    assert [e.path for e in info.value.errors] == ["classes"]
    assert "16,384 cap combinations, above the limit of 10,000" in info.value.errors[0].message


@st.composite
def stable_studies(draw):
    c = draw(st.integers(1, 6))
    n = draw(st.integers(1, 4))
    load = draw(st.floats(0.05, 0.9))
    shares = draw(st.lists(st.floats(0.1, 1.0), min_size=n, max_size=n))
    means = draw(st.lists(st.floats(0.2, 5.0), min_size=n, max_size=n))
    scvs = draw(st.lists(st.sampled_from([0.0, 0.25, 1.0, 4.0]), min_size=n, max_size=n))
    priorities = draw(st.lists(st.sampled_from(["critical", "high", "normal", "low"]), min_size=n, max_size=n))
    discipline = draw(st.sampled_from(["non_preemptive", "preemptive"]))
    total = sum(shares)
    classes = [
        klass(f"k{i}", priorities[i], load * c * shares[i] / total / means[i], means[i], scvs[i]) for i in range(n)
    ]
    return study(classes, servers=c, discipline=discipline)


@given(stable_studies(), st.floats(1.05, 1.5))
def test_random_stable_studies_have_positive_responses_that_grow_with_load(doc, factor):
    base = analyze(doc, exact=FAST)
    assert base.stable and base.status == StudyStatus.ok
    for k in base.classes:
        assert k.mean_wait_hours >= 0 and k.mean_response_hours >= k.service_mean_hours > 0
    busier = {
        **doc,
        "classes": [{**k, "arrival_rate_per_hour": k["arrival_rate_per_hour"] * factor} for k in doc["classes"]],
    }
    heavier = analyze(busier, exact=FAST)
    if not heavier.stable:
        assert base.offered_load * factor >= base.servers * (1 - 1e-12)
        return
    for before, after in zip(base.classes, heavier.classes, strict=True):
        assert after.mean_response_hours >= before.mean_response_hours * (1 - 1e-12), (
            before.name,
            before.method_detail,
        )
