"""The latency and throughput panels when a compile left a backlog: warm figures beside all,
the backlog named with its drain time, the window marked."""

from __future__ import annotations

from types import MappingProxyType

from probe.analysis.live_figures import build_live
from probe.analysis.steady_state import capacity_rps
from probe.contract.live import ReplayStatus
from probe.contract.options import OptConfig
from probe.contract.session import ConfigEntry, SessionData
from probe.engine.process.local_link import LocalLink
from tests.fake_engine import FakeEngine
from tests.probe.test_steady_state import request
from tui.app import InfertopApp


def backlog_view():
    """c1 served warm, then c2's first request waited 120 s on a compile; 40 queued behind it,
    and the last served ones are still from that backlog."""
    records, free_at = [], 0.0
    for seq in range(60):
        config = "c1" if seq < 10 else "c2"
        arrival = float(seq)
        start = max(arrival, free_at)
        stall = 120.0 if seq == 10 else 0.0
        free_at = start + 0.5 + stall
        records.append(request(seq, arrival, start, free_at, stall_ms=stall * 1e3,
                               config=config))
    options = OptConfig(compile="default")
    configs = MappingProxyType({"c1": ConfigEntry("c1", OptConfig()),
                                "c2": ConfigEntry("c2", options)})
    data = SessionData(records=tuple(records), configs=configs)
    capacity = capacity_rps(records)
    replay = ReplayStatus(trace="chat", running=True, paused=False, speed=1.0, dispatched=113,
                          completed=60, failed=0, total=None, queue_depth=53,
                          offered_rps=1.0, capacity_rps=capacity, overloaded=False)
    return build_live(data, t_s=float(free_at), model="t5-small", device="cpu",
                      options=options, config_id="c2", window_start_seq=0,
                      compiling_since_s=None, compiling_request=None, device_sample=None,
                      replay=replay)


async def test_the_panels_name_the_backlog_and_show_warm_figures_beside_all(tmp_path, read_screen):
    view = backlog_view()
    assert view.backlog is not None and view.window.backlog_dominated
    app = InfertopApp(LocalLink(FakeEngine()), initial=view, options=view.options, speed=1.0,
                      clock=lambda: 0.0, snapshot_dir=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = read_screen(app)
    # capacity 2 req/s, offered 1 req/s: 53 queued drain in 53 s
    assert "queue 53 — left by c2's compiles:" in screen
    assert "drains in ≈ 53 s at the current capacity" in screen
    assert "warm" in screen and "window*" in screen
    cold = view.window.warm.cold
    assert f"backlog-dominated: {cold} of 60 waited on a compile" in screen
    # the warm p50 is a request's service (500 ms), the window's p50 is the backlog's wait
    latency_row = next(line for line in screen.splitlines() if "latency  window*" in line)
    assert "500 ms" in latency_row and latency_row.count(" s ") >= 1


async def test_the_compact_layout_keeps_a_warm_p50(tmp_path, read_screen):
    view = backlog_view()
    app = InfertopApp(LocalLink(FakeEngine()), initial=view, options=view.options, speed=1.0,
                      clock=lambda: 0.0, snapshot_dir=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = read_screen(app)
    assert "warm" in screen and "window*" in screen and "queue 53" in screen
