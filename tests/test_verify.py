"""Tests of the independent plan verifier (optsched.verify) and of the brute-force oracle (tests/oracle.py)."""

from __future__ import annotations

import random

import pytest

from optsched.schema.errors import InvalidPlan
from optsched.schema.plan import Allocation, DeviceUse, Placement, Plan, Status
from optsched.schema.workload import Workload
from optsched.verify.placement import amdahl_speedup, eligible, evaluate, verify

try:
    from tests.oracle import brute_force
except ImportError:  # tests/ is not a package: pytest puts it on sys.path itself
    from oracle import brute_force


# --------------------------------------------------------------------------------------------
# Fixtures: a small hand-computed workload and its correct plan
# --------------------------------------------------------------------------------------------


def base_workload(**power) -> Workload:
    """Two groups in two domains, a hard job with memory/deadline/speed_on and a normal job."""
    return Workload.model_validate(
        {
            "name": "base",
            "devices": [
                {
                    "id": "big",
                    "model": "H",
                    "count": 2,
                    "memory_gb": 80,
                    "domain": "rackA",
                    "idle_w": 50,
                    "power_levels": [{"cap_w": 400, "speed": 1.0}, {"cap_w": 700, "speed": 1.5}],
                },
                {
                    "id": "small",
                    "model": "L",
                    "count": 2,
                    "memory_gb": 24,
                    "domain": "rackB",
                    "idle_w": 20,
                    "power_levels": [{"cap_w": 150, "speed": 0.5}],
                },
            ],
            "jobs": [
                {
                    "id": "train",
                    "work_hours": 10,
                    "parallel_fraction": 0.9,
                    "priority": "high",
                    "memory_gb": 40,
                    "deadline_hours": power.pop("train_deadline", 10),
                    "speed_on": {"H": 2.0},
                },
                {"id": "infer", "work_hours": 2, "parallel_fraction": 0.5, "weight": 1.5},
            ],
            "power": {"budget_w": 2000, "domains": {"rackA": 1500, "rackB": 400}, **power},
        }
    )


def correct_plan() -> Plan:
    """Hand-computed plan for base_workload().

    train: big x1 @700 W (1.5 x speed_on 2.0 = 3.0) + big x1 @400 W (1.0 x 2.0 = 2.0):
        s_host = 3, R = 5, S = 1 / (0.1/3 + 0.9/5) = 4.6875, runtime = 10 / 4.6875 = 32/15 h <= 10 h;
        work fractions 3/5 and 2/5 per device.
    infer: small x2 @150 W (0.5 each): s_host = 0.5, R = 1, S = 1 / (0.5/0.5 + 0.5/1) = 2/3, runtime 3 h;
        work fraction 0.5 per device.
    power: big 700 + 400 = 1100 W (rackA), small 2 x 150 = 300 W (rackB), total 1400 W.
    weighted speedup: high 4 x 1 x 4.6875 = 18.75, normal 2 x 1.5 x 2/3 = 2, total 20.75.
    """
    return Plan(
        workload="base",
        objective_name="weighted_speedup",
        status=Status.optimal,
        objective=20.75,
        bound=20.75,
        gap=0.0,
        solve_seconds=0.01,
        weighted_speedup=20.75,
        power_w=1400.0,
        power_by_domain={"rackA": 1100.0, "rackB": 300.0},
        placements=(
            Placement(
                job="train",
                priority="high",
                admitted=True,
                speedup=4.6875,
                runtime_hours=32 / 15,
                deadline_hours=10.0,
                meets_deadline=True,
                allocations=(
                    Allocation(device="big", count=1, cap_w=700.0, speed=3.0, work_fraction=0.6),
                    Allocation(device="big", count=1, cap_w=400.0, speed=2.0, work_fraction=0.4),
                ),
            ),
            Placement(
                job="infer",
                priority="normal",
                admitted=True,
                speedup=2 / 3,
                runtime_hours=3.0,
                deadline_hours=None,
                meets_deadline=None,
                allocations=(Allocation(device="small", count=2, cap_w=150.0, speed=0.5, work_fraction=0.5),),
            ),
        ),
        devices=(
            DeviceUse(
                device="big", model="H", domain="rackA", used=2, idle=0, power_w=1100.0, idle_w=50.0,
                memory_gb=80.0, power_levels=((400.0, 1.0), (700.0, 1.5)),
            ),
            DeviceUse(
                device="small", model="L", domain="rackB", used=2, idle=0, power_w=300.0, idle_w=20.0,
                memory_gb=24.0, power_levels=((150.0, 0.5),),
            ),
        ),
    )


def build_plan(w: Workload, assignment: dict, status: Status = Status.optimal) -> Plan:
    """A plan whose reported numbers are self-consistent for `assignment` (job -> {(group, cap_w): n}).

    Used to make plans that break exactly one rule: everything reported is recomputed, so the only
    violations left are the ones the assignment itself commits.
    """
    ev = evaluate(w, assignment)
    placements = []
    for job in w.jobs:
        j = ev["jobs"][job.id]
        placements.append(
            Placement(
                job=job.id,
                priority=job.priority.value,
                admitted=j["admitted"],
                speedup=j["speedup"],
                runtime_hours=j["runtime_hours"],
                deadline_hours=job.deadline_hours,
                meets_deadline=j["meets_deadline"],
                allocations=tuple(
                    Allocation(device=g, count=c, cap_w=cap, speed=s, work_fraction=f)
                    for g, cap, c, s, f in j["allocations"]
                ),
            )
        )
    devices = tuple(
        DeviceUse(
            device=g.id, model=g.model, domain=g.domain, used=ev["used"][g.id], idle=g.count - ev["used"][g.id],
            power_w=ev["group_power_w"][g.id], idle_w=g.idle_w, memory_gb=g.memory_gb,
            power_levels=tuple((lv.cap_w, lv.speed) for lv in g.power_levels),
        )
        for g in w.devices
    )
    return Plan(
        workload=w.name, objective_name=w.objective, status=status, objective=ev["objective"],
        bound=ev["objective"], gap=0.0, solve_seconds=0.0, weighted_speedup=ev["weighted_speedup"],
        power_w=ev["power_w"], power_by_domain=ev["power_by_domain"], placements=tuple(placements), devices=devices,
    )


CORRECT = {"train": {("big", 700): 1, ("big", 400): 1}, "infer": {("small", 150): 2}}


def replace_placement(plan: Plan, job: str, **changes) -> Plan:
    placements = tuple(p.model_copy(update=changes) if p.job == job else p for p in plan.placements)
    return plan.model_copy(update={"placements": placements})


def only(problems: list[str], *needles: str) -> str:
    """The single problem reported, checked to contain every needle."""
    assert len(problems) == 1, problems
    for needle in needles:
        assert needle in problems[0], problems
    return problems[0]


# --------------------------------------------------------------------------------------------
# Correct plans
# --------------------------------------------------------------------------------------------


def test_hand_computed_plan_is_valid():
    assert verify(base_workload(), correct_plan()) == []


def test_builder_reproduces_hand_computed_numbers():
    built = build_plan(base_workload(), CORRECT)
    assert verify(base_workload(), built) == []
    assert built.objective == pytest.approx(20.75)
    assert built.power_w == pytest.approx(1400.0)
    assert built.placements[0].speedup == pytest.approx(4.6875)


def test_plan_given_as_dict_or_json_and_workload_as_dict():
    w = base_workload()
    plan = correct_plan()
    assert verify(w.model_dump(mode="json"), plan.model_dump(mode="json")) == []
    assert verify(w, plan.model_dump_json()) == []


def test_unparseable_plan_raises_invalid_plan_with_fields():
    bad = correct_plan().model_dump(mode="json")
    bad["status"] = "great"
    del bad["power_w"]
    with pytest.raises(InvalidPlan) as info:
        verify(base_workload(), bad)
    paths = {e.path for e in info.value.errors}
    assert "status" in paths and "power_w" in paths


def test_infeasible_plan_without_admitted_jobs_is_accepted():
    plan = Plan(
        workload="base", objective_name="weighted_speedup", status=Status.infeasible, objective=None, bound=None,
        gap=None, solve_seconds=0.0, weighted_speedup=0.0, power_w=0.0, diagnosis=("budget too small",),
    )
    assert verify(base_workload(), plan) == []


def test_infeasible_status_with_admitted_jobs_is_checked():
    plan = correct_plan().model_copy(update={"status": Status.infeasible, "objective": 99.0})
    only(verify(base_workload(), plan), "objective", "99")


def test_optional_job_may_be_left_out():
    w = base_workload()
    plan = build_plan(w, {"train": CORRECT["train"]})
    assert not plan.placements[1].admitted
    assert verify(w, plan) == []


# --------------------------------------------------------------------------------------------
# Each kind of violation
# --------------------------------------------------------------------------------------------


def test_double_booked_capacity():
    w = base_workload(budget_w=None, domains={})
    plan = build_plan(w, {"train": {("big", 700): 2}, "infer": {("big", 400): 1}})
    msg = only(verify(w, plan), "device 'big'", "3 devices allocated", "has 2")
    assert "'train': 2" in msg and "'infer': 1" in msg


def test_power_over_budget():
    only(verify(base_workload(budget_w=1300), correct_plan()), "power", "1400 W exceeds budget_w 1300 W")


def test_domain_over_budget():
    w = base_workload(domains={"rackA": 1000, "rackB": 400})
    only(verify(w, correct_plan()), "domain 'rackA'", "1100 W", "1000 W", "big")


def test_idle_draw_counts_toward_power():
    # infer left out: small devices idle at 20 W each -> total 1100 + 40 = 1140 W > 1120 W.
    w = base_workload(budget_w=1120)
    plan = build_plan(w, {"train": CORRECT["train"]})
    assert plan.power_w == pytest.approx(1140.0)
    only(verify(w, plan), "1140 W exceeds budget_w 1120 W")


def test_missed_deadline():
    # runtime 32/15 = 2.133 h > 2 h; the plan honestly reports meets_deadline = False.
    w = base_workload(train_deadline=2.0)
    plan = build_plan(w, CORRECT)
    assert plan.placements[0].meets_deadline is False
    only(verify(w, plan), "job 'train'", "misses its deadline", "2.13333 h > deadline 2 h")


def test_deadline_met_within_relative_tolerance():
    w = base_workload(train_deadline=(32 / 15) * (1 - 1e-9))
    assert verify(w, build_plan(w, CORRECT)) == []


def test_wrong_meets_deadline_flag():
    plan = replace_placement(correct_plan(), "train", meets_deadline=False)
    only(verify(base_workload(), plan), "job 'train'", "meets_deadline")


def test_wrong_speedup():
    plan = replace_placement(correct_plan(), "train", speedup=5.0)
    only(verify(base_workload(), plan), "job 'train'", "speedup 5", "4.6875")


def test_wrong_runtime():
    plan = replace_placement(correct_plan(), "infer", runtime_hours=2.0)
    only(verify(base_workload(), plan), "job 'infer'", "runtime_hours")


def test_ineligible_device_memory():
    # train needs 40 GB; small has 24 GB. (Deadline relaxed: on small it would take 11 h.)
    w = base_workload(budget_w=None, domains={}, train_deadline=100)
    plan = build_plan(w, {"train": {("small", 150): 2}, "infer": {("big", 400): 1}})
    only(verify(w, plan), "job 'train'", "device 'small' is not eligible", "40 GB", "24 GB")


def test_ineligible_device_unknown_memory_and_allowed_models():
    w = Workload.model_validate(
        {
            "devices": [
                {"id": "nomem", "model": "M", "count": 1, "power_levels": [{"cap_w": 100, "speed": 1}]},
                {
                    "id": "other",
                    "model": "N",
                    "count": 1,
                    "memory_gb": 80,
                    "power_levels": [{"cap_w": 100, "speed": 1}],
                },
            ],
            "jobs": [
                {"id": "a", "work_hours": 1, "parallel_fraction": 0, "memory_gb": 1},
                {"id": "b", "work_hours": 1, "parallel_fraction": 0, "allowed_models": ["M"]},
            ],
        }
    )
    assert not eligible(w.jobs[0], w.devices[0]) and eligible(w.jobs[0], w.devices[1])
    assert eligible(w.jobs[1], w.devices[0]) and not eligible(w.jobs[1], w.devices[1])
    problems = verify(w, build_plan(w, {"a": {("nomem", 100): 1}, "b": {("other", 100): 1}}))
    assert len(problems) == 2, problems
    assert any("job 'a'" in p and "device 'nomem'" in p and "unknown" in p for p in problems)
    assert any("job 'b'" in p and "device 'other'" in p and "allowed_models" in p for p in problems)


def test_hard_job_not_admitted():
    w = base_workload()
    plan = build_plan(w, {"infer": {("small", 150): 2}})
    only(verify(w, plan), "job 'train'", "high priority job is not admitted")


def test_wrong_objective():
    plan = correct_plan().model_copy(update={"objective": 25.0})
    only(verify(base_workload(), plan), "objective", "25", "20.75")


def test_wrong_weighted_speedup_field():
    plan = correct_plan().model_copy(update={"weighted_speedup": 21.0})
    only(verify(base_workload(), plan), "weighted_speedup 21")


def test_objective_name_mismatch():
    plan = correct_plan().model_copy(update={"objective_name": "min_power"})
    only(verify(base_workload(), plan), "objective", "'min_power'", "'weighted_speedup'")


def test_work_fractions_not_summing_to_one():
    placement = correct_plan().placements[1]
    bad = (placement.allocations[0].model_copy(update={"work_fraction": 0.6}),)
    problems = verify(base_workload(), replace_placement(correct_plan(), "infer", allocations=bad))
    assert len(problems) == 2, problems  # the per-device value and the sum
    assert all("job 'infer'" in p for p in problems)
    assert any("sum to 1.2, not 1" in p for p in problems)


def test_work_fractions_sum_to_one_but_wrong_split():
    # 0.5 / 0.5 would sum to 1 but the devices run at 3.0 and 2.0: fractions must be 0.6 / 0.4.
    placement = correct_plan().placements[0]
    swapped = tuple(a.model_copy(update={"work_fraction": 0.5}) for a in placement.allocations)
    problems = verify(base_workload(), replace_placement(correct_plan(), "train", allocations=swapped))
    assert len(problems) == 2, problems
    assert all("job 'train'" in p and "work_fraction" in p for p in problems)


def test_wrong_device_speed():
    placement = correct_plan().placements[0]
    allocs = (placement.allocations[0].model_copy(update={"speed": 1.5}), placement.allocations[1])
    only(verify(base_workload(), replace_placement(correct_plan(), "train", allocations=allocs)),
         "job 'train'", "device 'big'", "speed 1.5", "expected 3")


def test_unknown_group_and_unknown_cap():
    placement = correct_plan().placements[1]
    allocs = (placement.allocations[0].model_copy(update={"device": "ghost"}),)
    problems = verify(base_workload(), replace_placement(correct_plan(), "infer", allocations=allocs))
    assert any("job 'infer'" in p and "unknown device group 'ghost'" in p for p in problems), problems

    allocs = (placement.allocations[0].model_copy(update={"cap_w": 175.0}),)
    problems = verify(base_workload(), replace_placement(correct_plan(), "infer", allocations=allocs))
    assert any("device 'small' has no power level with cap 175 W" in p for p in problems), problems


def test_missing_duplicate_and_unknown_placements():
    plan = correct_plan()
    missing = plan.model_copy(update={"placements": plan.placements[:1], "weighted_speedup": 18.75, "objective": 18.75})
    problems = verify(base_workload(), missing)
    assert any("job 'infer': no placement" in p for p in problems), problems

    stranger = plan.placements[1].model_copy(update={"job": "stranger", "allocations": ()})
    extra = plan.model_copy(update={"placements": (*plan.placements, plan.placements[0], stranger)})
    problems = verify(base_workload(), extra)
    assert any("job 'train': 2 placements" in p for p in problems), problems
    assert any("job 'stranger'" in p and "not in the workload" in p for p in problems), problems
    assert any("device 'big'" in p and "4 devices allocated" in p for p in problems), problems


def test_not_admitted_placement_holding_devices():
    plan = replace_placement(correct_plan(), "infer", admitted=False, speedup=0.0, runtime_hours=None)
    plan = plan.model_copy(update={"weighted_speedup": 18.75, "objective": 18.75})
    only(verify(base_workload(), plan), "job 'infer'", "not admitted but holds 2 device(s)")


def test_min_and_max_devices():
    w = Workload.model_validate(
        {
            "devices": [{"id": "g", "model": "M", "count": 3, "power_levels": [{"cap_w": 100, "speed": 1}]}],
            "jobs": [
                {"id": "wide", "work_hours": 1, "parallel_fraction": 1, "min_devices": 2},
                {"id": "narrow", "work_hours": 1, "parallel_fraction": 1, "max_devices": 1},
            ],
        }
    )
    problems = verify(w, build_plan(w, {"wide": {("g", 100): 1}, "narrow": {("g", 100): 2}}))
    assert len(problems) == 2, problems
    assert any("job 'wide'" in p and "fewer than min_devices 2" in p for p in problems)
    assert any("job 'narrow'" in p and "more than max_devices 1" in p for p in problems)


def test_reported_power_and_device_use_mismatch():
    plan = correct_plan()
    bad_devices = (plan.devices[0].model_copy(update={"used": 1, "idle": 1, "power_w": 450.0}), plan.devices[1])
    bad = plan.model_copy(
        update={"power_w": 1500.0, "power_by_domain": {"rackA": 1100.0, "rackB": 250.0}, "devices": bad_devices}
    )
    problems = verify(base_workload(), bad)
    assert any("power_w 1500" in p for p in problems), problems
    assert any("power domain 'rackB'" in p and "250" in p for p in problems), problems
    assert any("device 'big'" in p and "1 used" in p for p in problems), problems
    assert any("device 'big'" in p and "1 idle" in p for p in problems), problems
    assert any("device 'big'" in p and "power_w 450" in p for p in problems), problems
    assert len(problems) == 5, problems

    missing = plan.model_copy(update={"devices": plan.devices[:1]})
    only(verify(base_workload(), missing), "device 'small'", "missing from plan.devices")


def test_min_power_objective_requires_every_job_and_reports_watts():
    # min_power: value is the total draw; every job (not only hard ones) must be admitted.
    w = base_workload().model_copy(update={"objective": "min_power"})
    w = Workload.model_validate(w.model_dump())
    plan = build_plan(w, CORRECT)
    assert plan.objective == pytest.approx(1400.0)
    assert verify(w, plan) == []
    only(verify(w, plan.model_copy(update={"objective": 20.75})), "min_power", "1400")

    partial = build_plan(w, {"train": CORRECT["train"]})
    only(verify(w, partial), "job 'infer'", "min_power requires every job")


def test_amdahl_limits():
    units = [(1, 2.0), (2, 1.0)]  # s_host 2, R 4
    assert amdahl_speedup(0.0, units) == pytest.approx((2.0, 2.0, 4.0))
    assert amdahl_speedup(1.0, units) == pytest.approx((4.0, 2.0, 4.0))
    # p = 0.5: 1 / (0.5/2 + 0.5/4) = 1 / 0.375 = 8/3
    assert amdahl_speedup(0.5, units)[0] == pytest.approx(8 / 3)
    assert amdahl_speedup(0.5, []) == (0.0, 0.0, 0.0)


# --------------------------------------------------------------------------------------------
# Brute-force oracle on hand-computable workloads
# --------------------------------------------------------------------------------------------


def oracle_case_single_job() -> Workload:
    return Workload.model_validate(
        {
            "name": "single",
            "devices": [
                {
                    "id": "g", "model": "M", "count": 2, "idle_w": 10,
                    "power_levels": [{"cap_w": 100, "speed": 1.0}, {"cap_w": 200, "speed": 1.5}],
                }
            ],
            "jobs": [{"id": "a", "work_hours": 1, "parallel_fraction": 1.0}],
            "power": {"budget_w": 300},
        }
    )


def test_oracle_single_job_under_budget():
    # p = 1 so S = R; normal priority weight 2 -> value 2R.
    # 2 x 200 W = 400 W > 300 W: out.  200 + 100 = 300 W: R = 2.5.  2 x 100 = 200 W: R = 2.
    # 1 x 200 + 1 idle (10 W) = 210 W: R = 1.5.  Best: R = 2.5 -> value 5.0.
    w = oracle_case_single_job()
    value, best = brute_force(w)
    assert value == pytest.approx(5.0)
    assert best == {"a": {("g", 100.0): 1, ("g", 200.0): 1}}
    assert verify(w, build_plan(w, best)) == []


def test_oracle_min_power_with_deadlines():
    # g: 3 devices, 100 W @ 1.0 or 150 W @ 1.4, idle 20 W.
    # a: 4 h of work, p = 1, deadline 2 h -> needs R >= 2: one device (<= 1.4) is not enough.
    # b: 1 h, p = 0, deadline 0.8 h -> needs s_host >= 1.25: a 150 W device.
    # So a takes 2 devices and b 1: all 3 busy. Cheapest: a 2 x 100 W (R = 2), b 1 x 150 W -> 350 W.
    w = Workload.model_validate(
        {
            "name": "minp",
            "objective": "min_power",
            "devices": [
                {
                    "id": "g", "model": "M", "count": 3, "idle_w": 20,
                    "power_levels": [{"cap_w": 100, "speed": 1.0}, {"cap_w": 150, "speed": 1.4}],
                }
            ],
            "jobs": [
                {"id": "a", "work_hours": 4, "parallel_fraction": 1.0, "deadline_hours": 2},
                {"id": "b", "work_hours": 1, "parallel_fraction": 0.0, "deadline_hours": 0.8},
            ],
        }
    )
    value, best = brute_force(w)
    assert value == pytest.approx(350.0)
    assert best == {"a": {("g", 100.0): 2}, "b": {("g", 150.0): 1}}
    assert verify(w, build_plan(w, best)) == []


def two_group_workload(budget: float | None) -> Workload:
    return Workload.model_validate(
        {
            "name": "twogroups",
            "devices": [
                {"id": "A", "model": "M1", "count": 1, "memory_gb": 80, "power_levels": [{"cap_w": 300, "speed": 2.0}]},
                {"id": "B", "model": "M2", "count": 2, "memory_gb": 40, "power_levels": [{"cap_w": 100, "speed": 1.0}]},
            ],
            "jobs": [
                {"id": "crit", "work_hours": 1, "parallel_fraction": 0.5, "priority": "critical", "memory_gb": 60},
                {"id": "n", "work_hours": 1, "parallel_fraction": 1.0},
            ],
            "power": {"budget_w": budget},
        }
    )


@pytest.mark.parametrize(
    ("budget", "expected", "assignment"),
    [
        # crit (60 GB) fits only on A: S = 2 (one device), weight 8 -> 16. n takes both B: R = 2, 2 x 2 = 4. Total 20.
        (None, 20.0, {"crit": {("A", 300.0): 1}, "n": {("B", 100.0): 2}}),
        # 400 W: crit's A uses 300 W, leaving 100 W for one B: n gets R = 1 -> 2. Total 18.
        (400.0, 18.0, {"crit": {("A", 300.0): 1}, "n": {("B", 100.0): 1}}),
        # 250 W: crit cannot run anywhere, and it must -> infeasible.
        (250.0, None, {}),
    ],
)
def test_oracle_two_groups_hard_job(budget, expected, assignment):
    w = two_group_workload(budget)
    value, best = brute_force(w)
    assert best == assignment
    if expected is None:
        assert value is None
    else:
        assert value == pytest.approx(expected)
        assert verify(w, build_plan(w, best)) == []


# --------------------------------------------------------------------------------------------
# Oracle vs verifier on random tiny workloads
# --------------------------------------------------------------------------------------------


def random_workload(rng: random.Random) -> Workload:
    devices = []
    for gi in range(rng.randint(1, 2)):
        levels = sorted(
            {(rng.choice([100, 150, 200, 250]), rng.choice([0.5, 1.0, 1.5, 2.0])) for _ in range(rng.randint(1, 2))}
        )
        devices.append(
            {
                "id": f"g{gi}", "model": f"M{gi}", "count": rng.randint(1, 3), "idle_w": rng.choice([0, 10, 30]),
                "memory_gb": rng.choice([None, 24, 80]), "domain": rng.choice([None, "d0"]),
                "power_levels": [{"cap_w": c, "speed": s} for c, s in levels],
            }
        )
    jobs = []
    for ji in range(rng.randint(1, 3)):
        job = {
            "id": f"j{ji}",
            "work_hours": rng.choice([1, 2, 4]),
            "parallel_fraction": rng.choice([0.0, 0.5, 0.9, 1.0]),
            "priority": rng.choice(["critical", "high", "normal", "low", "low"]),
            "weight": rng.choice([1, 2]),
            "min_devices": rng.choice([1, 1, 2]),
            "speed_on": rng.choice([{}, {"M0": 1.5}]),
        }
        if rng.random() < 0.4:
            job["deadline_hours"] = rng.choice([1, 2, 3])
        if rng.random() < 0.3:
            job["memory_gb"] = 40
        if rng.random() < 0.3:
            job["max_devices"] = 2
        jobs.append(job)
    power = {}
    if rng.random() < 0.7:
        power["budget_w"] = rng.choice([200, 400, 600, 900])
    if rng.random() < 0.4:
        power["domains"] = {"d0": rng.choice([150, 300, 500])}
    return Workload.model_validate(
        {"devices": devices, "jobs": jobs, "power": power, "objective": rng.choice(["weighted_speedup", "min_power"])}
    )


def random_assignment(w: Workload, rng: random.Random) -> dict:
    out = {}
    for job in w.jobs:
        alloc = {}
        for g in w.devices:
            for lv in g.power_levels:
                if rng.random() < 0.4:
                    alloc[(g.id, lv.cap_w)] = rng.randint(1, g.count)
        out[job.id] = alloc
    return out


@pytest.mark.slow
def test_oracle_agrees_with_verifier_on_random_tiny_workloads():
    """The oracle's optimum verifies; no random assignment the verifier accepts beats it."""
    rng = random.Random(20240607)
    checked_feasible = 0
    for _ in range(60):
        w = random_workload(rng)
        value, best = brute_force(w)
        if value is not None:
            plan = build_plan(w, best)
            assert verify(w, plan) == [], (w, best)
            assert plan.objective == pytest.approx(value)
            checked_feasible += 1
        for _ in range(40):
            plan = build_plan(w, random_assignment(w, rng))
            if verify(w, plan):
                continue
            assert value is not None, (w, plan)
            if w.objective == "min_power":
                assert plan.objective >= value - 1e-6, (w, plan)
            else:
                assert plan.objective <= value + 1e-6, (w, plan)
    assert checked_feasible >= 15
