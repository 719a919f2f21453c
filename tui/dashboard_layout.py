"""The dashboard's layout: the status bar, the panels in their rows, the doctor's line and the
footer, each widget bound to the app's reactives it draws (tui/app.py); dashboard.tcss sizes
them to the terminal."""

from __future__ import annotations

from typing import Any, Callable

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer

from tui.widgets.device import DevicePanel
from tui.widgets.doctor_line import DoctorLine
from tui.widgets.failures import FailuresPanel
from tui.widgets.graph_breaks import GraphBreakPanel
from tui.widgets.kv_cache import KVCachePanel
from tui.widgets.latency import LatencyPanel
from tui.widgets.recompiles import RecompilePanel
from tui.widgets.segments import SegmentsPanel
from tui.widgets.status_bar import StatusBar
from tui.widgets.throughput import ThroughputPanel


def dashboard_widgets(app: Any, clock: Callable[[], float]) -> ComposeResult:
    """What the app (its class: the reactives) composes; `clock` ticks the status bar's and
    the compile feed's times."""
    yield StatusBar(clock=clock, id="status").data_bind(
        app.view, app.requested, app.options_sent_s, app.speed, app.paused,
        app.engine_state, app.engine_note, app.switch_note, app.warming_beside)
    with Vertical(id="body"):
        with Horizontal(id="top"):
            yield LatencyPanel(id="latency").data_bind(app.view)
            with Vertical(id="side"):
                yield ThroughputPanel(id="throughput").data_bind(app.view)
                yield KVCachePanel(id="kv").data_bind(app.view)
                yield DevicePanel(id="device").data_bind(app.view)
        with Horizontal(id="middle"):
            yield RecompilePanel(clock=clock, id="recompiles").data_bind(
                app.view, app.engine_state)
            yield GraphBreakPanel(id="breaks").data_bind(app.view)
        yield FailuresPanel(id="failures").data_bind(app.view)
        yield SegmentsPanel(id="segments").data_bind(app.view)
        yield DoctorLine(id="doctor").data_bind(app.view)
    yield Footer(compact=True, show_command_palette=False)
