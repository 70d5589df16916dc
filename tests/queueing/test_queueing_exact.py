"""The exact engine (optsched.queueing.exact) against the closed forms it must reproduce, on the very chains it
builds for other studies; its QBD (optsched.queueing.qbd) against its truncated chain; the phase-type laws
against their moments; the engine's budget and labels."""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from optsched.queueing import analyze, exact
from optsched.queueing.analytic import QueueClass, erlang_c, mean_times
from optsched.queueing.exact import ExactBudget, exact_means
from optsched.queueing.phasetype import Law, gamma_fit, law_problem, phase_type
from optsched.queueing.qbd import Blocks, NotConverged, solve_qbd
from optsched.queueing.schema import Discipline
from optsched.queueing.simulation import mser5
from tests.queueing.queueing_factories import klass, study

NP, PR = Discipline.non_preemptive, Discipline.preemptive
# The engine's truncation takes at most 1e-4 of a level's mean number in system (ExactBudget.max_tail_share).
TOL = 1e-3


def gamma_moments(mean: float, scv: float) -> list[float]:
    shape, theta = 1.0 / scv, mean * scv
    return [theta**k * math.prod(shape + i for i in range(k)) for k in (1, 2, 3)]


@pytest.mark.parametrize("scv", [0.3, 0.5, 0.7, 1.0, 1.7, 4.0, 10.0])
def test_the_gamma_fit_matches_three_moments(scv):
    ph = gamma_fit(2.0, scv)
    assert np.all(ph.alpha >= 0) and ph.alpha.sum() == pytest.approx(1.0)
    assert [ph.moment(k) for k in (1, 2, 3)] == pytest.approx(gamma_moments(2.0, scv), rel=1e-9)


def test_the_declared_laws_have_their_mean_and_scv():
    for law, scv, phases in ((Law.hyperexponential, 4.0, 2), (Law.erlang, 0.25, 4), (Law.exponential, 1.0, 1)):
        ph = phase_type(law, 3.0, scv)
        assert ph is not None and ph.phases == phases
        m1, m2 = ph.moment(1), ph.moment(2)
        assert m1 == pytest.approx(3.0) and m2 / m1**2 - 1 == pytest.approx(scv)
    h2 = phase_type(Law.hyperexponential, 3.0, 4.0)
    assert h2 is not None
    rates = -np.diag(h2.T)
    assert h2.alpha[0] / rates[0] == pytest.approx(h2.alpha[1] / rates[1])  # balanced means
    assert phase_type(Law.gamma, 1.0, 0.0) is None  # a constant has no phase-type law


def test_a_law_must_fit_its_scv():
    assert law_problem(Law.exponential, 2.0) and law_problem(Law.hyperexponential, 0.5)
    assert law_problem(Law.erlang, 0.3) and not law_problem(Law.erlang, 1 / 3)
    assert not law_problem(Law.gamma, 0.3)


def test_the_engine_reproduces_erlang_c():
    c, rate, mean = 3, 2.4, 1.0
    got = exact_means([QueueClass(0, rate, mean, 1.0, Law.exponential)], c, NP)[0]
    a = rate * mean
    assert got.wait == pytest.approx(erlang_c(c, a) * mean / (c - a), rel=TOL)
    assert got.truncated_mass is not None and got.truncated_mass < 1e-6
    assert got.number_in_system == pytest.approx(rate * got.response, rel=TOL)


@pytest.mark.parametrize("discipline", [NP, PR])
def test_the_engine_reproduces_the_mmc_priority_formulas(discipline):
    classes = [QueueClass(0, 0.6, 1.0, 1.0, Law.exponential), QueueClass(1, 0.8, 1.0, 1.0, Law.exponential)]
    closed = mean_times(classes, 2, discipline)
    assert all(m.detail.startswith("exact") for m in closed)
    got = exact_means(classes, 2, discipline)
    for i, m in enumerate(closed):
        assert got[i].response == pytest.approx(m.response, rel=TOL)


@pytest.mark.parametrize("discipline", [NP, PR])
@pytest.mark.parametrize("law,scv", [(Law.gamma, 4.0), (Law.erlang, 0.5), (Law.hyperexponential, 2.0)])
def test_the_engine_reproduces_the_mg1_priority_formulas_with_unequal_means(discipline, law, scv):
    """Cobham and the M/G/1 preemptive-resume formula hold for any law: the engine's phase-type chains must agree."""
    classes = [QueueClass(0, 0.2, 1.0, scv, law), QueueClass(1, 0.1, 2.0, scv, law)]
    closed = mean_times(classes, 1, discipline)
    got = exact_means(classes, 1, discipline)
    for i, m in enumerate(closed):
        assert got[i].response == pytest.approx(m.response, rel=TOL)
        assert got[i].detail.startswith("exact: matrix-geometric (QBD)")


def test_classes_of_one_level_share_the_wait_and_split_the_queue():
    """Non-preemptive FCFS within a level: every class of it waits alike (PASTA), whatever its service."""
    classes = [
        QueueClass(0, 0.3, 1.0, 1.0, Law.exponential),
        QueueClass(1, 0.3, 0.5, 1.0, Law.exponential),
        QueueClass(1, 0.2, 2.0, 1.0, Law.exponential),
    ]
    got = exact_means(classes, 2, NP)
    assert got[1].wait == pytest.approx(got[2].wait, rel=TOL)


def test_a_chain_beyond_the_budget_is_left_to_the_approximation_with_its_reason():
    classes = [QueueClass(0, 1.0, 1.0, 4.0), QueueClass(1, 1.0, 2.0, 4.0)]
    assert exact_means(classes, 4, NP, ExactBudget(max_states=100)) == {}
    result = analyze(
        study([klass("a", "high", 1.0, 1.0, 4.0), klass("b", "low", 1.0, 2.0, 4.0)], servers=4),
        exact=ExactBudget(max_states=100),
    )
    assert all(k.method_detail.startswith("approximation") and "states" in k.method_detail for k in result.classes)


@pytest.mark.slow
def test_the_analytic_method_uses_the_declared_law():
    """At equal mean and scv 4 a two-phase hyperexponential and a gamma law queue differently (the study says
    which it means); c = 2, unequal means, so neither has a closed form."""
    def doc(law: str) -> dict:
        classes = [klass("a", "high", 0.4, 1.0, 4.0), klass("b", "low", 0.3, 2.0, 4.0)]
        for k in classes:
            k["work_hours"]["distribution"] = law
        return study(classes, servers=2)

    h2, gamma = analyze(doc("hyperexponential")), analyze(doc("gamma"))
    assert all(k.method_detail.startswith("exact: matrix-geometric (QBD)") for k in (*h2.classes, *gamma.classes))
    assert "hyperexponential" in h2.classes[1].method_detail and "gamma" in gamma.classes[1].method_detail
    assert h2.classes[1].mean_response_hours != pytest.approx(gamma.classes[1].mean_response_hours, rel=0.01)


def test_mser5_finds_a_transient_and_flags_a_trend():
    rng = np.random.default_rng(0)
    settled = rng.exponential(1.0, 5_000)
    transient = np.concatenate([np.linspace(20.0, 1.0, 500), settled])
    cut, at_limit = mser5(transient)
    assert 300 <= cut <= 800 and not at_limit
    trend = np.linspace(0.0, 100.0, 5_000) + rng.exponential(1.0, 5_000)
    assert mser5(trend)[1]


def test_the_matrix_geometric_solution_of_the_mm1_queue():
    """One phase a level: R = rho, pi_n = (1 - rho) rho^n, mean level rho / (1 - rho)."""
    lam, mu = 0.6, 1.0
    one = np.ones((1, 1))
    got = solve_qbd(Blocks(B00=-lam * one, B01=lam * one, B10=mu * one, A0=lam * one, A1=-(lam + mu) * one,
                           A2=mu * one))
    assert got.R[0, 0] == pytest.approx(lam / mu, rel=1e-10)
    assert got.pi0[0] == pytest.approx(1 - lam / mu, rel=1e-10)
    assert got.mean_level == pytest.approx(0.6 / 0.4, rel=1e-10)


@pytest.mark.slow
@pytest.mark.parametrize("discipline", [NP, PR])
def test_the_qbd_agrees_with_the_truncated_chain(discipline):
    """Two independent solutions of one model: the QBD (lowest level unbounded) and the truncated chain, with
    unequal means, unequal laws and 2 servers, where no closed form applies."""
    classes = [QueueClass(0, 0.2, 1.0, 2.0, Law.hyperexponential), QueueClass(1, 0.15, 2.0, 0.5, Law.erlang)]
    tight = ExactBudget(max_tail_share=1e-8, max_states=100_000)
    qbd = exact_means(classes, 2, discipline, tight)
    chain = exact_means(classes, 2, discipline, replace(tight, matrix_geometric=False))
    assert all(m.detail.startswith("exact: matrix-geometric (QBD)") for m in qbd.values())
    assert all(m.detail.startswith("exact: CTMC") for m in chain.values())
    for i in (0, 1):
        assert qbd[i].response == pytest.approx(chain[i].response, rel=1e-6)
        assert qbd[i].wait == pytest.approx(chain[i].wait, rel=1e-6)


def test_a_qbd_beyond_its_phases_falls_back_to_the_truncated_chain():
    classes = [QueueClass(0, 0.2, 1.0, 2.0, Law.hyperexponential), QueueClass(1, 0.15, 2.0, 0.5, Law.erlang)]
    got = exact_means(classes, 2, NP, ExactBudget(max_phases=5))
    assert all(m.detail.startswith("exact: CTMC") for m in got.values())


def test_the_engine_solves_with_one_blas_thread(monkeypatch):
    """A thread per core slowed the QBD's small dense products 2-16x beside busy processes: one thread while solving."""
    threads: list[int] = []

    def counted(blocks: Blocks, deadline: float | None = None):
        threads.extend(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
        return solve_qbd(blocks, deadline)

    monkeypatch.setattr(exact, "solve_qbd", counted)
    classes = [QueueClass(0, 0.2, 1.0, 2.0, Law.hyperexponential), QueueClass(1, 0.15, 2.0, 0.5, Law.erlang)]
    got = exact_means(classes, 2, NP)
    assert all(m.detail.startswith("exact: matrix-geometric (QBD)") for m in got.values())
    assert threads and set(threads) == {1}, threads


# Three preemptive classes on one server, unequal laws: the M/G/1 preemptive-resume formula is exact for each.
THREE_ON_ONE = [
    QueueClass(0, 0.2, 1.0, 2.0, Law.hyperexponential),
    QueueClass(1, 0.15, 2.0, 0.5, Law.erlang),
    QueueClass(2, 0.1, 1.5, 2.0, Law.gamma),
]


def test_a_preemptive_class_takes_its_figures_from_the_chain_of_the_levels_above_it():
    """Class k sees only levels 0..k: the middle class of three is the low class of the first two, the very chain
    (so equal to the last digit), and the closed form's value."""
    three = exact_means(THREE_ON_ONE, 1, PR)
    two = exact_means(THREE_ON_ONE[:2], 1, PR)
    closed = mean_times(THREE_ON_ONE, 1, PR)
    assert three[1].response == two[1].response and three[1].wait == two[1].wait
    for i in (0, 1):
        assert three[i].detail.startswith("exact: matrix-geometric (QBD)")
        assert three[i].response == pytest.approx(closed[i].response, rel=TOL)


def test_the_middle_class_qbd_agrees_with_the_truncated_chain():
    tight = ExactBudget(max_tail_share=1e-8, max_states=100_000)
    qbd = exact_means(THREE_ON_ONE[:2], 1, PR, tight)
    chain = exact_means(THREE_ON_ONE[:2], 1, PR, replace(tight, matrix_geometric=False))
    assert chain[1].detail.startswith("exact: CTMC")
    assert qbd[1].response == pytest.approx(chain[1].response, rel=1e-6)
    assert qbd[1].wait == pytest.approx(chain[1].wait, rel=1e-6)


def test_the_middle_class_on_two_servers_meets_buzen_and_bondi():
    """Preemptive M/M/c with one mean: levels 0..k are an M/M/c queue, so each class has a closed form."""
    classes = [QueueClass(i, rate, 1.0, 1.0, Law.exponential) for i, rate in enumerate((0.5, 0.6, 0.5))]
    closed = mean_times(classes, 2, PR)
    assert closed[1].detail.startswith("exact: Buzen & Bondi")
    got = exact_means(classes, 2, PR)
    assert got[1].detail.startswith("exact: matrix-geometric (QBD)")
    assert got[1].response == pytest.approx(closed[1].response, rel=TOL)


def test_a_qbd_is_counted_not_refused_on_its_estimate():
    """The phase estimate overcounts: a QBD estimated above the limit but counted within it is solved."""
    classes = [QueueClass(0, 0.3, 1.0, 4.0, Law.hyperexponential), QueueClass(1, 0.2, 2.0, 4.0, Law.hyperexponential)]
    got = exact_means(classes, 2, PR)
    assert got[1].detail.startswith("exact: matrix-geometric (QBD)")
    laws = [phase_type(k.law, k.mean, k.scv) for k in classes]
    high_bound = exact._geometric_bound(mean_times(classes, 2, PR)[0].response * classes[0].rate)
    chain = exact._Chain(classes, laws, 2, PR, [max(4, high_bound), exact.UNBOUNDED])  # type: ignore[arg-type]
    estimate = chain.estimated_phases()
    limit = int(estimate / 1.3)
    tight = exact_means(classes, 2, PR, ExactBudget(max_phases=limit))
    assert tight[1].detail.startswith("exact: matrix-geometric (QBD)"), (estimate, limit, tight[1].detail)


def test_a_class_beyond_both_exact_methods_says_why_for_each():
    result = analyze(
        study([klass("a", "high", 1.0, 1.0, 4.0), klass("b", "low", 1.0, 2.0, 4.0)], servers=4),
        exact=ExactBudget(max_states=100, max_phases=5),
    )
    low = result.classes[1].method_detail
    assert low.startswith("approximation") and "phases a level" in low and "the truncated chain:" in low, low


def test_the_reduction_stops_at_its_deadline():
    """A deadline already past stops the logarithmic reduction after one doubling instead of running it out (at
    load 0.99 it needs several)."""
    lam, mu = 0.99, 1.0
    one = np.ones((1, 1))
    blocks = Blocks(B00=-lam * one, B01=lam * one, B10=mu * one, A0=lam * one, A1=-(lam + mu) * one, A2=mu * one)
    with pytest.raises(NotConverged, match="time limit after 1 doublings"):
        solve_qbd(blocks, deadline=time.monotonic() - 1.0)
    assert solve_qbd(blocks, deadline=time.monotonic() + 60.0).R[0, 0] == pytest.approx(lam / mu, rel=1e-10)
