"""The keys on a dashboard attached to a server (a link whose facts say `remote`): every option
change is a warm switch, `x` gives the switch under way up, and the keys a server refuses
(pause, the rate) are not offered."""

from __future__ import annotations

from dataclasses import replace

from probe.contract.engine_link import EngineLive, LinkFacts, Role, Steer
from probe.contract.protocol import SetOptions
from probe.engine.process.local_link import LocalLink
from tests.fake_engine import FakeEngine
from tests.tui.conftest import screen_text
from tui.app import InfertopApp


class Attached(LocalLink):
    def facts(self) -> LinkFacts:
        return replace(super().facts(), remote=True)


def notes(app: InfertopApp) -> str:
    return " ".join(n.message for n in app._notifications)


async def test_an_option_key_on_a_server_switches_warm_and_x_gives_it_up(stages, tmp_path, until):
    engine = FakeEngine()
    view = stages["baseline"]
    app = InfertopApp(Attached(engine), initial=view, options=view.options, speed=1.0,
                      snapshot_dir=tmp_path, clock=lambda: 0.0, apply_delay_s=0)
    async with app.run_test(size=(160, 48)) as pilot:
        # the footer draws its bindings a frame or more after the first screen on a busy
        # machine: wait for it, then read what it offers
        await until(pilot, lambda: "save" in screen_text(app).splitlines()[-1])
        assert "a server switches warm" in screen_text(app)
        footer = screen_text(app).splitlines()[-1]
        assert "save" in footer and "pause" not in footer and "×2" not in footer
        await pilot.press("k")                          # not a compile: warm on a server anyway
        await until(pilot, lambda: engine.warm_asks)
        assert engine.warm_asks == [view.options.with_option("kv_cache", "off")]
        assert not engine.commands(SetOptions) and app.warm.under_way is not None
        await pilot.press("x")
        await until(pilot, lambda: engine.sides_stopped == 1)
        assert app.warm.under_way is None and app.requested == view.options
        assert "gave up the switch to kv_cache=off; c1 serves on" in notes(app)
        await pilot.press("S")
        assert "a server always switches warm" in notes(app)
        assert app.switch_kind == "warm"
        await pilot.press("space", "plus")              # not offered: nothing sent
        await pilot.pause()
        assert engine.commands() == []


async def test_a_watching_dashboard_says_so_follows_the_server_and_T_asks_to_steer(
        stages, tmp_path, until):
    engine = FakeEngine()
    asked: list = []

    class Watching(Attached):
        def send(self, ask) -> None:
            asked.append(ask)
            super().send(ask)

    view = stages["baseline"]
    app = InfertopApp(Watching(engine), initial=view, options=view.options, speed=1.0,
                      snapshot_dir=tmp_path, clock=lambda: 0.0, apply_delay_s=0)
    async with app.run_test(size=(160, 48)) as pilot:
        assert "take over" not in screen_text(app).splitlines()[-1]     # it steers
        engine.emit(Role(False, "d2 watches: d1 steers; its keys are refused here"))
        await until(pilot, lambda: not app.steering)
        await pilot.pause()
        assert "⇄ d2 watches: d1 steers; its keys are refused here · T takes over once " \
               "nobody steers" in screen_text(app)
        assert "take over" in screen_text(app).splitlines()[-1]
        switched = replace(view, options=view.options.with_option("bucketing", "on"))
        engine.emit(EngineLive(switched))                 # the steering one switched it
        await until(pilot, lambda: app.view is switched)
        assert app.requested == switched.options
        await pilot.press("T")
        await until(pilot, lambda: any(isinstance(a, Steer) for a in asked))
        engine.emit(Role(True, "d2 steers this server"))
        await until(pilot, lambda: app.steering)
        await pilot.pause()
        assert "watching" not in screen_text(app)
