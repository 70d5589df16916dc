"""The slowdown guard on MILP entries that have no other runtime limit (MilpPolicy._guarded): a long job the event's
weights make cheap does not start on what the short jobs leave over."""

from __future__ import annotations

from optsched.night.milp import SLOWDOWN_CAP
from tests.night.conftest import night_checked
from tests.support.factories import device, job, workload


def long_beside_short() -> dict:
    """Four devices of speed 1, nothing running at 0 h (so no job has a wait to compare with), one job still to be
    released (so the night is not over): A, 8 h of work on up to 4 devices, not elastic (it keeps the devices it
    starts on), and three 0.25-h jobs on one device each. By weighted shortest remaining time an hour of A is worth
    an eighth of a short job's, so an unguarded MILP starts A on the one device the short jobs leave and A ends at
    8 h; on all four its run is 2 h."""
    return workload(
        [device("g", "m", 4, [(100, 1.0)])],
        [
            job("A", work=8.0, p=1.0, max_devices=4, elastic=False),
            *(job(f"s{i}", work=0.25, p=1.0, max_devices=1) for i in range(3)),
            job("later", work=0.25, p=1.0, max_devices=1, release_hours=6.0),
        ],
    )


def test_a_long_job_starts_on_no_fewer_devices_than_the_guard_allows():
    plan = night_checked(long_beside_short(), candidates=("milp",))
    a = next(t for t in plan.jobs if t.job == "A")
    fastest = 8.0 / 4
    assert a.finish_hours is not None
    assert a.finish_hours - (a.start_hours or 0.0) <= SLOWDOWN_CAP * fastest + 1e-6
    assert a.finish_hours < 8.0 - 1e-6
