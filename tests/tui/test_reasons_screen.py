"""Guard failures are cut to a line in the feed; `e` shows every one whole."""

from __future__ import annotations

from dataclasses import replace

from probe.contract.records import CompileEvent
from tests.fake_engine import FakeEngine
from tui.reasons_screen import ReasonsScreen, reasons_text

LONG = ("0/0: tensor 'input_ids' size mismatch at index 1. expected 64, actual 37; "
        "0/1: " + "___check_obj_id(L['self'].model.decoder.block[0].layer[0], 140) " * 4
        + "; 0/2: the last guard, far past 120 columns [not markup]")


def test_every_part_of_a_reason_is_kept_whole():
    event = CompileEvent("0/3", "recompile", "decode_step", 620.0, 12.5, LONG, "req-7", "c2")
    shown = reasons_text((event,)).plain
    assert "10:20 recompile 0/3 decode_step · req-7 · c2" in shown
    for part in LONG.split("; "):
        assert part in shown


async def test_e_opens_the_reasons_whole_and_esc_closes(make_app, stages, read_screen):
    view = stages["compiled"]
    event = replace(view.compile_events[-1], reason=LONG, start_s=view.compile_events[-1].start_s)
    view = replace(view, compile_events=view.compile_events + (event,))
    app = make_app(FakeEngine(), at="compiled")
    app.set_reactive(type(app).view, view)
    async with app.run_test(size=(120, 40)) as pilot:
        app.view = view
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, ReasonsScreen)
        assert "the last guard, far past 120 columns [not markup]" in read_screen(app)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ReasonsScreen)
