"""Fixtures for the dashboard tests: synthetic snapshots (tests/tui/synthetic.py, built by the real
probe.analysis.live_figures.build_live, with the states that stress the text), a fake engine, and the screen as
plain text. (Engine logs go under tmp_path: tests/conftest.py points XDG_STATE_HOME there.)"""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest
from rich.console import Console

from probe.contract.live import LiveView
from probe.contract.options import OptConfig
from probe.engine.process.local_link import LocalLink
from tests.fake_engine import FakeEngine
from tests.tui.synthetic import ASKED, STAGES, stage
from tui.app import InfertopApp
from tui.widgets.recompiles import RecompilePanel


@pytest.fixture(scope="session")
def stages() -> dict[str, LiveView]:
    return {name: stage(name) for name in STAGES}


@pytest.fixture(autouse=True)
def still_compile_clock(monkeypatch) -> None:
    """A running compile's seconds tick on the local clock: fixed here (as make_app fixes the
    app's), so a screen with a compile running reads the same in every run. (The app passes
    the status bar its clock, not yet the recompilation panel.)"""
    monkeypatch.setattr(RecompilePanel, "default_clock", staticmethod(lambda: 0.0))


@pytest.fixture
def make_app(tmp_path: Path, stages) -> Callable[..., InfertopApp]:
    def make(engine: FakeEngine | None = None, *, at: str | None = "baseline",
             options: OptConfig | None = None, source: str = "", **kwargs) -> InfertopApp:
        initial = stages[at] if at else None
        if options is None:
            options = ASKED.get(at or "", initial.options if initial else OptConfig())
        kwargs.setdefault("snapshot_dir", tmp_path / "snapshots")
        kwargs.setdefault("speed", 1.0)
        kwargs.setdefault("clock", lambda: 0.0)
        link = None if engine is None else LocalLink(engine, source)
        return InfertopApp(link, initial=initial, options=options, **kwargs)

    return make


def screen_text(app: InfertopApp) -> str:
    """What a user reads on the terminal now (toasts included when enabled)."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), record=True,
                      force_terminal=True, color_system=None, legacy_windows=False,
                      safe_box=False)
    console.print(app.screen._compositor.render_update(
        full=True, screen_stack=app._background_screens, simplify=False))
    return console.export_text()


@pytest.fixture
def read_screen() -> Callable[[InfertopApp], str]:
    return screen_text


async def wait_for(pilot, predicate: Callable[[], bool], timeout_s: float = 30.0) -> None:
    """Let the app run until `predicate` holds (events from the reader thread are async)."""
    deadline = time.monotonic() + timeout_s
    await pilot.pause()
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the dashboard")
        await pilot.pause(0.02)


@pytest.fixture
def until():
    return wait_for


class ManualTimer:
    """A Textual timer that fires only when the test says so: the key-staging tests then
    assert the order of events, never how long a shared machine took between two keys."""

    def __init__(self, delay_s: float, callback: Callable[[], None]) -> None:
        self.delay_s = delay_s
        self.callback = callback
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True

    def fire(self) -> None:
        assert not self.stopped, "a stopped timer fired"
        self.callback()


@pytest.fixture
def apply_timers(monkeypatch) -> list[ManualTimer]:
    """Every "apply options" timer the dashboard sets, in order, held until fired by hand
    (every other timer is Textual's own and runs as usual)."""
    timers: list[ManualTimer] = []
    real_set_timer = InfertopApp.set_timer

    def set_timer(self, delay, callback=None, *, name=None, **kwargs):
        if name != "apply options":
            return real_set_timer(self, delay, callback, name=name, **kwargs)
        timers.append(ManualTimer(delay, callback))
        return timers[-1]

    monkeypatch.setattr(InfertopApp, "set_timer", set_timer)
    return timers


@pytest.fixture
def gil_hog() -> Iterator[Callable[[], None]]:
    """Start a thread that holds the GIL in pure-Python work, as a compile in-process would."""
    stop = threading.Event()
    threads: list[threading.Thread] = []

    def hog() -> None:
        def spin() -> None:
            n = 0
            while not stop.is_set():
                for _ in range(50_000):
                    n += 1
        thread = threading.Thread(target=spin, name="gil-hog", daemon=True)
        thread.start()
        threads.append(thread)

    yield hog
    stop.set()
    for thread in threads:
        thread.join(timeout=5)
