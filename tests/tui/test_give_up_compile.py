"""A pending toggle says what it waits for; `x` gives up a running compile: the engine restarts
serving the previous config, and the session goes on (the fake engine records it)."""

from __future__ import annotations

from probe.contract.protocol import SetOptions
from tests.tui.conftest import screen_text
from tui.engine_handle import FakeEngine


def status(app) -> str:
    return "\n".join(screen_text(app).splitlines()[:4])


async def test_a_pending_toggle_names_the_compile_it_waits_for(make_app, until):
    engine = FakeEngine()
    app = make_app(engine, at="compiling", apply_delay_s=0)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("b")                               # bucketing: pending
        await until(pilot, lambda: engine.commands(SetOptions))
        await pilot.pause()
        text = status(app)
    compiling = app.view.compiling
    assert compiling is not None and compiling.request_id in text
    assert f"bucketing→on waits: after {compiling.request_id}'s compile, 23 s so far" in text
    assert "x gives it up and serves c1" in text


async def test_x_gives_up_the_compile_and_restarts_the_engine_on_the_previous_config(
        make_app, until, stages):
    engine = FakeEngine()
    app = make_app(engine, at="compiling", apply_delay_s=0)
    previous = next(e.options for e in stages["compiling"].configs if e.config_id == "c1")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("x")
        await until(pilot, lambda: engine.restarts == 1)
        assert engine.commands(SetOptions)[-1] == SetOptions(previous)
        assert app.requested == previous
        assert app.engine_state == "starting"


async def test_x_without_a_compile_running_says_so_and_restarts_nothing(make_app):
    engine = FakeEngine()
    app = make_app(engine, at="baseline", apply_delay_s=0)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("x")
        await pilot.pause(0.3)
    assert engine.restarts == 0 and not engine.commands(SetOptions)
