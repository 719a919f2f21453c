"""The dashboard ends, its engine with it, when its terminal goes away; with no terminal to
begin with (a test, a pipe) nothing is watched."""

from __future__ import annotations

from tests.fake_engine import FakeEngine
from tui import terminal_watch


async def test_the_dashboard_quits_once_its_terminal_is_gone(make_app, monkeypatch):
    terminal = {"there": True}
    monkeypatch.setattr(terminal_watch, "has_controlling_terminal", lambda: terminal["there"])
    app = make_app(FakeEngine())
    exits: list[bool] = []
    async with app.run_test() as pilot:
        monkeypatch.setattr(app, "exit", lambda *a, **k: exits.append(True))
        assert app.terminal_watched
        await app._check_terminal()
        assert not exits and not app._stopping.is_set()      # still there: nothing happens
        terminal["there"] = False
        await app._check_terminal()
        await pilot.pause()
    assert exits and app._stopping.is_set()


async def test_without_a_terminal_at_start_nothing_is_watched(make_app, monkeypatch):
    monkeypatch.setattr(terminal_watch, "has_controlling_terminal", lambda: False)
    app = make_app(FakeEngine())
    async with app.run_test() as pilot:
        await pilot.pause()
        assert not app.terminal_watched
        assert app.is_running
