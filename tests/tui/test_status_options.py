"""The options line shows what the engine serves: a value asked for is pending until the engine
says it received the options and applied them (LiveView.requested_options,
options_pending); a value the engine chose itself (continuous batching forces decode=fullgraph)
is shown as changed, with the engine's reason, never as pending for ever."""

from __future__ import annotations

from dataclasses import replace

from probe.contract.options import OptConfig
from probe.contract.protocol import EngineLive, SetOptions
from tests.fake_engine import FakeEngine
from tests.tui.synthetic import CONTINUOUS_NOTE


def status(app) -> str:
    return str(app.query_one("#status").render())


async def test_b_b_serves_continuous_and_decode_is_changed_by_the_engine_not_pending(
        make_app, stages, until, apply_timers):
    engine = FakeEngine()
    app = make_app(engine, apply_delay_s=1.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("B", "B")                 # the wait is held until fired by hand
        apply_timers[-1].fire()
        await until(pilot, lambda: bool(engine.commands(SetOptions)))
        assert engine.commands(SetOptions) == [SetOptions(OptConfig(batching="continuous"))]
        assert status(app).splitlines()[1].startswith("batch=off→continuous · ")
        served = stages["continuous"]           # the engine received them and applied them
        assert served.requested_options == OptConfig(batching="continuous")
        assert not served.options_pending
        engine.emit(EngineLive(served))
        await until(pilot, lambda: app.view is served)
        await pilot.pause()
        shown = status(app).splitlines()
    assert "decode=fullgraph!" in shown[1] and "batch=continuous" in shown[1]
    assert "→" not in shown[1]
    assert shown[2] == f"! decode=fullgraph (asked hf-generate): {CONTINUOUS_NOTE}"


async def test_a_value_stays_pending_until_the_engine_received_and_applied_it(make_app, stages,
                                                                            until):
    engine = FakeEngine()
    app = make_app(engine, apply_delay_s=0)
    baseline = stages["baseline"]
    int8 = OptConfig(quant="int8")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("i")                          # int8, which this engine refuses
        shown = []
        for view in (replace(baseline, t_s=baseline.t_s + 1.0),       # not received yet
                         replace(baseline, t_s=baseline.t_s + 2.0, requested_options=int8,
                                 options_pending=True),                    # not applied yet
                         replace(baseline, t_s=baseline.t_s + 3.0, requested_options=int8)):
            engine.emit(EngineLive(view))
            await until(pilot, lambda: app.view is view)   # noqa: B023 (awaited here)
            await pilot.pause()
            shown.append(status(app))
    assert "quant=off→int8" in shown[0] and "quant=off→int8" in shown[1]
    assert "quant=off!" in shown[2] and "→" not in shown[2]
    assert "! quant=off (asked int8)" in shown[2]          # no note: no reason made up


async def test_a_fresh_engine_clock_ends_what_was_pending(make_app, stages, until):
    """A restarted engine starts with the options sent last, on a new session clock."""
    engine = FakeEngine()
    app = make_app(engine, apply_delay_s=0)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("b")
        assert "bucket=off→on" in status(app)
        fresh = replace(stages["baseline"], t_s=3.0, recent=())
        engine.emit(EngineLive(fresh))
        await until(pilot, lambda: app.view is fresh)
        await pilot.pause()
        assert app.options_sent_s is None
        assert "bucket=off!" in status(app)


async def test_a_read_only_session_shows_its_options_as_served(make_app, stages):
    app = make_app(None, at="continuous", options=stages["continuous"].options)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        shown = status(app)
    assert "decode=fullgraph " in shown and "!" not in shown and "→" not in shown
