"""Issue 38: first figures took 47 s with nothing useful on screen; the trace's shape is known
before the engine is, and the status bar says it from the first frame."""

from __future__ import annotations

from types import SimpleNamespace

from tests.fake_engine import FakeEngine
from tests.tui.conftest import screen_text
from tui.trace_shape import trace_shape
from workloads.trace_records import Trace, TraceRequest


def _workload() -> SimpleNamespace:
    requests = tuple(TraceRequest(timestamp_ms=i * 1000.0, input_length=10 + i,
                                  output_length=4, id=f"r{i}") for i in range(11))
    return SimpleNamespace(trace=Trace(name="chat", requests=requests))


def test_the_shape_in_one_line():
    assert trace_shape(_workload()) == ("trace chat: 11 requests over 0:10, 1 req/s at ×1; "
                                        "inputs p50 15 (max 20) tokens, outputs p50 4")
    assert trace_shape(None) == ""


async def test_the_status_bar_shows_it_while_the_engine_starts(make_app):
    app = make_app(FakeEngine(), at=None, source=trace_shape(_workload()))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        top = screen_text(app).splitlines()[0]
    assert "trace chat: 11 requests" in top
