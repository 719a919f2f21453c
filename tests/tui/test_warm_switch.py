"""The warm switch (`S`, then an option key): a side engine compiles and prewarms the new config
while the serving one goes on; when it is ready the session cuts over to it. The fake engine
records what the app asked of it."""

from __future__ import annotations

from dataclasses import replace

from probe.contract.protocol import EngineLive, SetOptions, WarmFailed, WarmProgress, WarmReady
from tests.fake_engine import FakeEngine
from tests.tui.conftest import screen_text


def status(app) -> str:
    return "\n".join(screen_text(app).splitlines()[:6])


async def test_the_warm_switch_labels_itself_serves_on_then_cuts_over(make_app, until, stages):
    engine = FakeEngine()
    app = make_app(engine, at="baseline", apply_delay_s=0)
    baseline = stages["baseline"]
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("S")
        await until(pilot, lambda: "warm switch on" in status(app))
        await pilot.press("c")                               # compile=default, warm
        await until(pilot, lambda: engine.warm_asks)
        target = engine.warm_asks[-1]
        assert target.compile == "default" and target == app.requested
        assert not engine.commands(SetOptions)   # the serving engine was asked nothing
        engine.emit(WarmProgress("prewarming 4 shapes", 4))
        later = replace(baseline, t_s=baseline.t_s + 35.5)     # the old config serves on
        engine.emit(EngineLive(later))
        await until(pilot, lambda: "35 s so far" in status(app))
        assert "warm switch to compile=default: prewarming 4 shapes beside c1" in status(app)
        assert app.view.config_id == "c1" and engine.cut_overs == 0
        assert "(asked default)" not in status(app)     # pending, not "the engine chose"
        engine.emit(WarmReady(4, 36.0))
        await until(pilot, lambda: engine.cut_overs == 1)
        await until(pilot, lambda: "cut over" in status(app))
        text = status(app)
    assert "cut over, no request waited · 36 s prewarming 4 shapes beside c1" in text
    assert not engine.commands(SetOptions) and engine.restarts == 0
    assert app.options_sent_s is None   # the side engine started with the new options


async def test_cold_stays_the_default_and_s_toggles_back(make_app, until):
    engine = FakeEngine()
    app = make_app(engine, at="baseline", apply_delay_s=0)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("S", "S", "c")                     # warm on, off: cold
        await until(pilot, lambda: engine.commands(SetOptions))
        assert "warm switch" not in status(app)
    assert not engine.warm_asks


async def test_an_eager_target_switches_directly_even_when_warm(make_app, until):
    engine = FakeEngine()
    app = make_app(engine, at="baseline", apply_delay_s=0)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("S", "b")                          # bucketing on, still eager
        await until(pilot, lambda: engine.commands(SetOptions))
    assert not engine.warm_asks


async def test_a_failed_side_engine_is_said_and_the_serving_config_stays(make_app, until):
    engine = FakeEngine()
    app = make_app(engine, at="baseline", apply_delay_s=0)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("S", "c")
        await until(pilot, lambda: engine.warm_asks)
        engine.emit(WarmFailed("the side engine exited (code 1)"))
        await until(pilot, lambda: app.requested == app.view.options)
        await until(pilot, lambda: "prewarming" not in status(app))
    assert engine.cut_overs == 0


async def test_asking_for_something_else_gives_up_the_side_engine(make_app, until):
    engine = FakeEngine()
    app = make_app(engine, at="baseline", apply_delay_s=0)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("S", "c")
        await until(pilot, lambda: engine.warm_asks)
        await pilot.press("c", "c", "c")                     # back to compile=off: eager
        await until(pilot, lambda: engine.commands(SetOptions))
        await until(pilot, lambda: "prewarming" not in status(app))
    assert engine.sides_stopped >= 1 and engine.cut_overs == 0


def test_the_warm_switch_line_shortens_by_meaning_and_keeps_what_the_switch_did():
    """At 80 columns the `⇄` line was dropped whole (a plain line with no short form): its
    parts shorten instead, what the switch is doing kept, the detail shortened first."""
    from probe.contract.options import OptConfig
    from tui.warm_switch import SwitchUnderWay, switch_on_parts, warm_parts
    from tui.widgets.status_bar import switch_line

    switch = SwitchUnderWay(OptConfig(compile="default", bucketing="on"), "c2", 10.0, shapes=4)
    warming = warm_parts(switch, None, 45.0)
    done = warm_parts(switch.done(60.0, 50.0, 4, None), None, 60.0)
    for width in (80, 120, 200):
        assert "warm switch on" in switch_line(switch_on_parts(), width).plain
        line = switch_line(warming, width).plain
        assert "warm switch to compile=default bucketing=on" in line and "35 s so far" in line
        line = switch_line(done, width).plain
        assert "compile=default bucketing=on" in line and "cut over" in line
        assert len(line) <= width
    assert "the engine's notice" in switch_line(done, 200).plain
