"""Every key, pressed through Textual's Pilot: the fake engine gets the command and the
dashboard shows the new state."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from probe.common.units import fmt_speed
from probe.contract.options import CHOICES, OptConfig
from probe.contract.protocol import (
    EngineLive,
    Pause,
    ResetWindow,
    Resume,
    SaveSnapshot,
    SetOptions,
    SetSpeed,
    SnapshotFailed,
)
from tests.fake_engine import FakeEngine
from tui.help_screen import HelpScreen
from tui.widgets.status_bar import SHORT_NAMES

TOGGLES = {"c": "compile", "g": "decode", "d": "dynamic", "b": "bucketing", "k": "kv_cache",
           "p": "precision", "i": "quant", "w": "prewarm", "B": "batching", "f": "freezing",
           "m": "gemv", "l": "kv_layout", "W": "wrapper", "G": "guards",
           "a": "attention", "t": "parallel", "F": "qkv", "C": "compile_cache", "T": "tf32"}


def status(app) -> str:
    return str(app.query_one("#status").render())


def test_every_option_has_a_key_and_a_status_bar_name():
    assert set(TOGGLES.values()) == set(SHORT_NAMES) == set(OptConfig().as_dict())


async def test_every_toggle_key_sends_the_next_option_and_the_status_bar_shows_it(make_app):
    engine = FakeEngine()
    app = make_app(engine, apply_delay_s=0)
    served = app.view.options
    expected = app.requested
    async with app.run_test(size=(240, 40)) as pilot:     # room to show every option pending
        for key, option in TOGGLES.items():
            await pilot.press(key)
            expected = expected.cycled(option)
            sent = engine.commands(SetOptions)
            assert sent[-1] == SetOptions(expected), key
            # not served yet: the status bar shows the value served → the one asked for
            # (briefly, "kv→off", once every option is pending)
            assert re.search(rf"{SHORT_NAMES[option]}(={getattr(served, option)})?→"
                             rf"{getattr(expected, option)}\b", status(app)), key
        assert len(engine.commands(SetOptions)) == len(TOGGLES)


async def test_keys_pressed_in_a_row_send_only_the_final_options(make_app, apply_timers):
    engine = FakeEngine()
    app = make_app(engine)                          # staged: sent when the wait ends
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("B", "B")                 # off → dynamic → continuous
        assert engine.commands(SetOptions) == []
        assert "batch=off→continuous" in status(app)   # pending at once
        apply_timers[-1].fire()
        await pilot.pause()
    assert engine.commands(SetOptions) == [SetOptions(OptConfig(batching="continuous"))]


async def test_each_key_restarts_the_wait(make_app, apply_timers):
    engine = FakeEngine()
    app = make_app(engine, apply_delay_s=1.0)
    async with app.run_test() as pilot:
        await pilot.press("c")
        await pilot.press("c")
        first, second = apply_timers
        assert first.delay_s == second.delay_s == 1.0
        assert first.stopped and not second.stopped     # the second key restarted the wait
        assert engine.commands(SetOptions) == []
        second.fire()
        await pilot.pause()
    assert engine.commands(SetOptions) == [SetOptions(OptConfig(compile="reduce-overhead"))]


async def test_a_toggle_cycles_through_every_value_and_wraps(make_app):
    engine = FakeEngine()
    app = make_app(engine, apply_delay_s=0)
    async with app.run_test() as pilot:
        for _ in CHOICES["batching"]:
            await pilot.press("B")
    seen = [c.options.batching for c in engine.commands(SetOptions)]
    assert seen == ["dynamic", "continuous", "off"]


async def test_the_pending_mark_goes_once_the_engine_serves_the_options(make_app, stages,
                                                                        until):
    engine = FakeEngine()
    app = make_app(engine, apply_delay_s=0)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("b")
        assert "bucket=off→on" in status(app)
        served = replace(stages["baseline"], options=OptConfig(bucketing="on"), t_s=200.0)
        engine.emit(EngineLive(served))
        await until(pilot, lambda: app.view is served)
        assert "bucket=on" in status(app) and "→" not in status(app)


async def test_toggles_build_on_the_last_requested_options_not_the_served_ones(make_app):
    engine = FakeEngine()
    app = make_app(engine, options=OptConfig(compile="default"),   # snapshot serves baseline
                   apply_delay_s=0)
    async with app.run_test() as pilot:
        await pilot.press("c")
    assert engine.commands(SetOptions)[-1].options.compile == "reduce-overhead"


async def test_space_pauses_and_resumes(make_app):
    engine = FakeEngine()
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("space")
        assert engine.commands()[-1] == Pause() and "paused" in status(app)
        await pilot.press("space")
        assert engine.commands()[-1] == Resume() and "running" in status(app)


@pytest.mark.parametrize("key, presses, expected", [
    ("plus", 1, [2.0]), ("minus", 1, [0.5]),
    ("plus", 8, [2.0, 4.0, 8.0, 16.0, 32.0, 64.0]),          # stops at ×64
    # on past the clock's ×0.125 floor (arrivals thinned) to the calibration's own floor
    ("minus", 12, [2.0 ** -k for k in range(1, 10)]),
])
async def test_speed_keys_double_and_halve_within_bounds(make_app, key, presses, expected):
    """`-` and `+` reach every factor the calibration can choose: its bounds are theirs."""
    from workloads.thinning import MAX_FACTOR, MIN_FACTOR

    engine = FakeEngine()
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(presses):
            await pilot.press(key)
        assert [c.speed for c in engine.commands(SetSpeed)] == expected
        assert fmt_speed(expected[-1]) in status(app)
        if expected[-1] < 0.125:
            assert "2% of arrivals kept" in status(app)
    if presses > len(expected):         # it stopped: at a bound
        assert expected[-1] in (MIN_FACTOR, MAX_FACTOR)


async def test_r_resets_the_window(make_app):
    engine = FakeEngine()
    app = make_app(engine)
    async with app.run_test() as pilot:
        await pilot.press("r")
    assert engine.commands() == [ResetWindow()]


async def test_s_saves_the_session_json_and_an_svg_screenshot(make_app, tmp_path, until):
    engine = FakeEngine()
    folder = tmp_path / "snaps"      # created on demand (its parent must exist: the output rule)
    app = make_app(engine, snapshot_dir=folder)
    notes: list[str] = []
    async with app.run_test(size=(120, 40)) as pilot:
        app.notify = lambda message, **kw: notes.append(message)   # type: ignore[method-assign]
        await pilot.press("s")
        (command,) = engine.commands(SaveSnapshot)
        await until(pilot, lambda: any("session saved" in n for n in notes))
    json_path = command.path
    assert json_path.startswith(str(folder / "infertop-")) and json_path.endswith(".json")
    svg = folder / (json_path.rsplit("/", 1)[1][:-5] + ".svg")
    assert svg.read_text().startswith("<svg") and "Latency" in svg.read_text()
    assert [p.name for p in folder.iterdir()] == [svg.name]     # no temporary left behind
    assert any(str(svg) in n for n in notes) and any(json_path in n for n in notes)


async def test_an_unwritable_snapshot_folder_is_a_notification_and_the_session_goes_on(
        make_app, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    engine = FakeEngine()
    app = make_app(engine, snapshot_dir=blocker / "snaps", apply_delay_s=0)
    notes: list[tuple[str, str]] = []
    async with app.run_test() as pilot:
        app.notify = lambda m, severity="information", **kw: notes.append((m, severity))  # type: ignore[method-assign]
        await pilot.press("s")
        await pilot.press("b")                 # still working
    assert notes and notes[0][1] == "error" and "cannot write" in notes[0][0]
    assert engine.commands(SaveSnapshot) == []
    assert engine.commands(SetOptions)


async def test_a_failed_session_save_is_reported(make_app, until):
    engine = FakeEngine(replies=False)
    app = make_app(engine)
    notes: list[tuple[str, str]] = []
    async with app.run_test() as pilot:
        app.notify = lambda m, severity="information", **kw: notes.append((m, severity))  # type: ignore[method-assign]
        engine.emit(SnapshotFailed("/x/y.json", "No space left on device"))
        await until(pilot, lambda: any(s == "error" for _, s in notes))
    assert "No space left on device" in notes[-1][0]


async def test_question_mark_lists_every_key(make_app, read_screen):
    app = make_app(FakeEngine())
    # tall enough for the whole list: at 120x40 the help scrolls (its own layout test)
    async with app.run_test(size=(120, 80)) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = read_screen(app)
        for key in [*TOGGLES, "space", "+", "-", "r", "s", "R", "q", "ctrl+q", "?", "D", "e", "x", "S"]:
            assert f" {key} " in text, key
        assert "q / ctrl+q" in text                          # one row for one action
        assert "engine log: none (a fake engine keeps no log)" in text
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_the_footer_shows_the_keys(make_app, read_screen, until):
    app = make_app(FakeEngine())
    async with app.run_test(size=(120, 40)) as pilot:
        # the footer renders a frame after the first one on a busy machine
        await until(pilot, lambda: "? help" in read_screen(app).splitlines()[-1])
        footer = read_screen(app).splitlines()[-1]
    for label in ("? help", "c compile", "b bucket", "i quant", "B batch", "space pause",
                  "s save", "q quit"):
        assert label in footer
    assert "f freeze" not in footer                   # in the help only


async def test_the_help_screen_says_where_the_engine_log_is(make_app, read_screen):
    engine = FakeEngine()
    engine.log_path = "/home/u/.local/state/infertop/engine-20250101-120000-42-0.log"
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("question_mark")
        assert f"engine log: {engine.log_path}" in read_screen(app)


@pytest.mark.parametrize("key", ["q", "ctrl+q"])
async def test_q_and_ctrl_q_quit(make_app, key):
    app = make_app(FakeEngine())
    async with app.run_test() as pilot:
        await pilot.press(key)
        await pilot.pause()
    assert app.return_code == 0 and not app.is_running


async def test_q_quits_from_the_help_screen_too(make_app):
    app = make_app(FakeEngine())
    async with app.run_test() as pilot:
        await pilot.press("question_mark", "q")
        await pilot.pause()
    assert not app.is_running


async def test_i_toggles_int8_and_q_no_longer_does(make_app):
    engine = FakeEngine()
    app = make_app(engine, apply_delay_s=0)
    async with app.run_test() as pilot:
        await pilot.press("i")
    assert engine.commands(SetOptions) == [SetOptions(OptConfig(quant="int8"))]
