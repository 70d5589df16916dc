"""Issue 25: every chart is in the size table, and charts are drawn apart from the HTTP process (api/drawing.py):
a chart that overruns OPTSCHED_CHART_TIMEOUT_S is stopped with its process while another chart is drawn, many
requests for one chart draw it once, and requests beyond the drawing processes and their waiting room get 503 at
once instead of holding HTTP threads (a 9,990-point queueing front was drawn for 88 s in the HTTP process and a
cached chart waited 83 s behind it)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import pytest

from api.costs import _CHART_SIZES, chart_size, check_chart
from api.drawing import WAITING_PER_SLOT, ChartDrawer, ChartUnavailable
from api.errors import ApiProblem
from api.viewer import PLACEMENT
from optsched.service.kinds import KINDS
from tests.support.charts import drawn, slow_png


def test_every_chart_of_every_kind_is_in_the_size_table():
    charts = [chart for spec in KINDS.values() for chart in spec.charts] + [PLACEMENT]
    missing = [chart.file for chart in charts if chart.draw.__name__ not in _CHART_SIZES]
    assert missing == []
    assert "queueing_front_png" in _CHART_SIZES  # the one the red team found missing


def test_a_queueing_front_too_long_to_draw_is_not_drawn(make_app):
    app = make_app(MAX_CHART_ROWS=400)
    klass = SimpleNamespace(name="c")
    huge = SimpleNamespace(front=[object()] * 9_990, classes=[klass] * 4)
    small = SimpleNamespace(front=[object()] * 200, classes=[klass] * 4)
    draw = next(c.draw for c in KINDS["queueing"].charts)
    with app.app_context():
        with pytest.raises(ApiProblem) as info:
            check_chart("plot.png", chart_size(draw, huge))
        assert info.value.status == 409 and "9,990 rows" in info.value.detail
        check_chart("plot.png", chart_size(draw, small))
        with pytest.raises(ApiProblem) as info:
            check_chart("mystery.png", chart_size(slow_png, small))  # a chart without a size is not drawn
        assert info.value.status == 409


@pytest.mark.slow
def test_a_chart_past_its_timeout_is_stopped_and_does_not_hold_another(tmp_path):
    log = tmp_path / "drawn.txt"
    drawer = ChartDrawer(workers=2, timeout_s=2.0)
    try:
        drawer.png("warm", slow_png, {"seconds": 0, "name": "warm", "log": str(log)})  # one process started
        with ThreadPoolExecutor(2) as pool:
            slow = pool.submit(drawer.png, "slow", slow_png, {"seconds": 600, "name": "slow", "log": str(log)})
            time.sleep(0.5)
            started = time.monotonic()
            fast = drawer.png("fast", slow_png, {"seconds": 0, "name": "fast", "log": str(log)})
            fast_s = time.monotonic() - started
            with pytest.raises(ChartUnavailable, match="OPTSCHED_CHART_TIMEOUT_S"):
                slow.result(timeout=60)
        assert fast == b"\x89PNGfast"
        # The fast chart did not wait for the slow one (it may have started its own process: up to ~10 s loaded).
        assert fast_s < 20
        slow_pid = dict(drawn(str(log)))["slow"]
        status = Path(f"/proc/{slow_pid}/status")
        assert not status.exists() or "zombie" in status.read_text()  # killed with its chart
        # Its place is taken by a new process.
        assert drawer.png("after", slow_png, {"seconds": 0, "name": "after", "log": str(log)}) == b"\x89PNGafter"
    finally:
        drawer.stop()


@pytest.mark.slow
def test_one_chart_asked_for_at_once_is_drawn_once_and_the_surplus_gets_503(tmp_path):
    log = tmp_path / "drawn.txt"
    drawer = ChartDrawer(workers=1, timeout_s=30.0)
    try:
        drawer.png("warm", slow_png, {"seconds": 0, "name": "warm", "log": str(log)})
        same = {"seconds": 1, "name": "same", "log": str(log)}
        room = 1 + WAITING_PER_SLOT  # one drawing, the others waiting for it
        with ThreadPoolExecutor(room) as pool:
            answers = list(pool.map(lambda _: drawer.png("same", slow_png, same), range(room)))
        assert answers == [b"\x89PNGsame"] * room
        assert [name for name, _ in drawn(str(log))] == ["warm", "same"]  # drawn once
        # 12 at once: those beyond the waiting room are refused (each would hold an HTTP thread), it is drawn once.
        storm = {"seconds": 1, "name": "storm", "log": str(log)}

        def ask(_: int) -> bytes | str:
            try:
                return drawer.png("storm", slow_png, storm)
            except ChartUnavailable as exc:
                return str(exc)

        with ThreadPoolExecutor(12) as pool:
            answers = list(pool.map(ask, range(12)))
        assert b"\x89PNGstorm" in answers
        assert all(a == b"\x89PNGstorm" or "OPTSCHED_CHART_WORKERS" in a for a in answers)
        assert [name for name, _ in drawn(str(log))] == ["warm", "same", "storm"]
        # One drawing and WAITING_PER_SLOT waiting: the next distinct chart is refused at once.
        barrier = threading.Barrier(WAITING_PER_SLOT + 2)

        def busy(name: str) -> bytes:
            barrier.wait()
            return drawer.png(name, slow_png, {"seconds": 1.5, "name": name, "log": str(log)})

        with ThreadPoolExecutor(WAITING_PER_SLOT + 1) as pool:
            held = [pool.submit(busy, f"b{i}") for i in range(WAITING_PER_SLOT + 1)]
            barrier.wait()
            time.sleep(0.5)
            started = time.monotonic()
            with pytest.raises(ChartUnavailable, match="OPTSCHED_CHART_WORKERS") as info:
                drawer.png("surplus", slow_png, {"seconds": 0, "name": "surplus", "log": str(log)})
            assert time.monotonic() - started < 1.0 and info.value.retry_after_s > 0
            assert [f.result(timeout=60) for f in held] == [b"\x89PNGb%d" % i for i in range(WAITING_PER_SLOT + 1)]
    finally:
        drawer.stop()
