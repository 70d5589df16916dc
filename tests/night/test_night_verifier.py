"""The timeline verifier is not vacuous: each broken timeline is caught with a message naming the rule."""

from __future__ import annotations

from optsched.night.engine import Decision, simulate
from optsched.night.fleet import Use
from optsched.schema.night import NightQueue
from optsched.verify.timeline import load_night_plan, verify_timeline
from tests.night.conftest import START, night_checked
from tests.night.test_night_exact import hand_queue
from tests.support.factories import device, workload
from tests.support.factories import job as tjob


def broken(mutate) -> list[str]:
    queue = hand_queue()
    document = night_checked(queue).model_dump(mode="json")
    mutate(document)
    return verify_timeline(queue, document)


def job(document, name):
    return next(j for j in document["jobs"] if j["job"] == name)


def test_a_device_serving_two_jobs_is_caught():
    def share(d):
        job(d, "C")["segments"][0]["allocations"][0]["devices"] = [0]

    assert broken(share) == ["device 'g'[0] serves 'C' and 'B' at once (2-2.5 h)"]


def test_a_budget_broken_in_a_window_is_caught():
    def no_recap(d):
        seg = job(d, "C")["segments"][1]
        seg["allocations"][0].update(cap_w=100.0, speed=1.0)

    problems = broken(no_recap)
    assert any("exceeds the global budget 150 W" in p for p in problems)


def test_running_before_release_or_before_a_predecessor_ends_is_caught():
    def early(d):
        for name in ("B", "C"):
            seg = job(d, name)["segments"][0]
            seg["from_hours"] = 0.5 if name == "C" else 1.5

    problems = broken(early)
    assert any("before its release at 1 h" in p for p in problems)
    assert any("before 'A' (which it comes after) ends at 2 h" in p for p in problems)


def test_work_that_does_not_add_up_is_caught():
    def short(d):
        job(d, "B")["segments"][0]["to_hours"] = 3.5

    assert any("the job needs 2" in p for p in broken(short))


def test_a_wrong_report_is_caught():
    def lie(d):
        job(d, "C")["deadline_met"] = False
        d["events"][3]["power_w"] = 100.0
        d["summary"]["energy_kwh"] = 1.0

    problems = broken(lie)
    assert any("reports deadline_met False" in p for p in problems)
    assert any("event at 2.5 h: reports 100 W" in p for p in problems)
    assert any("energy_kwh" in p for p in problems)


def test_the_verifier_reads_an_output_directory(tmp_path):
    from optsched.service.outputs import write_night_outputs

    plan = night_checked(hand_queue())
    write_night_outputs(plan, tmp_path / "out")
    assert load_night_plan(tmp_path / "out") == plan
    assert verify_timeline(hand_queue(), tmp_path / "out") == []


class _MoveMidRestart:
    """Job 0 on g0 until 0.5 h; on g1 from the event at 1 h (B's release), mid-restart back on g0 from 1.2 h."""

    name = "scripted"

    def decide(self, view):
        alive = 0 in view.ready or any(r.job == 0 for r in view.running)
        group = 1 if 0.5 < view.t < 1.1 else 0
        return Decision({0: (Use(group, 0, 1),)} if alive else {})


def test_back_to_back_restarts_on_other_devices_are_two_restarts():
    """A moved at 1 h restarts on g1 (0.5 h); moved back at 1.2 h it restarts on g0 (0.5 h, to 1.7 h): the first
    restart was cut short by the move, not a 0.7 h restart; two restarts. A second restart cut short is caught."""
    queue = workload(
        [device("g0", "fast", 1, [(100.0, 1.0)]), device("g1", "slow", 1, [(100.0, 1.0)])],
        [
            tjob("A", work=2.0, p=0.0, elastic=True),
            tjob("B", work=0.5, p=0.0, release_hours=1.0),
            tjob("C", work=0.5, p=0.0, release_hours=1.2),
        ],
    )
    plan = simulate(NightQueue.load(queue), _MoveMidRestart(), start=START, hours=8.0, restart_hours=0.5)
    a = plan.jobs[0]
    assert [(s.from_hours, s.to_hours, s.restart) for s in a.segments] == [
        (0.0, 1.0, False),
        (1.0, 1.2, True),
        (1.2, 1.7, True),
        (1.7, 2.7, False),
    ]
    assert a.restarts == 2 and verify_timeline(queue, plan) == []
    document = plan.model_dump(mode="json")
    document["jobs"][0]["segments"][2]["to_hours"] = 1.6
    document["jobs"][0]["segments"][3]["from_hours"] = 1.6
    assert any("restart before segment 3 lasted 0.4 h" in p for p in verify_timeline(queue, document))
