"""Guard failures are cut to a line in the feed; `e` shows every one whole, and the session's
whole compile ledger as `snapshot show` prints it."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from probe.contract.options import OptConfig
from probe.contract.records import CompileEvent, LedgerEntry
from probe.contract.session import ConfigEntry, SessionData
from probe.session_store.ledger_table import ledger_rows, ledger_text
from probe.session_store.snapshot_report import ledger_lines
from tests.fake_engine import FakeEngine
from tui.reasons_screen import ReasonsScreen, ledger_section, reasons_text

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


KEY = "(1, 1) int64 · (1, 398, 64) fp32 · (1, 398) int64 · (1,) int64"
LEDGER = (LedgerEntry("c1", "decode_step", KEY, 31, 141.0, 0.3, 11.5, ("chat-00000",), True, 31),
          LedgerEntry("c1", "encode", "(1, 398) int64 · (1, 398) int64", 1, 13.0, 13.0, 0.0),
          LedgerEntry("c2", "encode", "(1, 64) int64 · (1, 64) int64", 9, 109.0, 1.5, 18.8,
                      ("a", "b", "c", "d"), False, 9))


def test_the_ledger_section_is_snapshot_shows_table_row_for_row():
    shown = ledger_section(LEDGER).plain
    assert shown.splitlines()[1:] == ledger_text(LEDGER).splitlines()
    assert "\n".join(["", "compile ledger:", ledger_text(LEDGER)]) in show_text(LEDGER)
    assert "no graph has been called yet" in ledger_section(()).plain


def show_text(ledger) -> str:
    data = SessionData(configs=MappingProxyType({"c1": ConfigEntry("c1", OptConfig()),
                                                 "c2": ConfigEntry("c2", OptConfig())}),
                       compile_ledger=ledger)
    return "\n".join(ledger_lines(data.compile_ledger))


async def test_e_shows_the_whole_ledger_of_the_view_and_scrolls_to_its_last_column(
        make_app, stages, read_screen):
    view = replace(stages["compiled"], compile_ledger=LEDGER)
    app = make_app(FakeEngine(), at="compiled")
    app.set_reactive(type(app).view, view)
    async with app.run_test(size=(120, 40)) as pilot:
        app.view = view
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, ReasonsScreen)
        screen = read_screen(app)
        assert "compile ledger (the session)" in screen
        for row in ledger_rows(LEDGER):         # every graph, its first columns in view
            assert f"{row[0]}  " in screen and str(row[1]) in screen
        assert "stalled" not in screen          # wider than the screen: scrolled to, not wrapped
        for _ in range(80):
            await pilot.press("right")
        await pilot.pause()
        screen = read_screen(app)
        assert "stalled  paid back" in screen and "not yet" in screen and "a, b, c +1" in screen


async def test_the_ledgers_last_column_is_in_view_at_200_and_end_reaches_a_wider_one(
        make_app, stages, read_screen):
    """At 200 columns the ~115-column ledger fits whole (the screen is as wide as the
    terminal); a ledger wider than the terminal has End: its last column and row."""
    wide_key = KEY + " · (1, 398, 64) fp32 · (1, 398, 64) fp32 · (1, 398, 64) fp32"
    wider = LEDGER + (LedgerEntry("c3", "decode_step", wide_key, 7, 14.0, 2.0, 1.0),)
    for size, ledger, keys in (((200, 50), LEDGER, ()), ((120, 40), wider, ("end",))):
        view = replace(stages["compiled"], compile_ledger=ledger)
        app = make_app(FakeEngine(), at="compiled")
        app.set_reactive(type(app).view, view)
        async with app.run_test(size=size) as pilot:
            app.view = view
            await pilot.press("e", *keys)
            await pilot.pause()
            screen = read_screen(app)
            assert "stalled  paid back" in screen and "not yet" in screen, (size, screen)
            if keys:
                await pilot.press("home")
                await pilot.pause()
                assert app.screen.query_one("#help-body").scroll_offset == (0, 0)
