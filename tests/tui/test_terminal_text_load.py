"""`infertop --load` of a session whose strings hold ESC sequences and control characters:
the panels show them escaped (as visible text), never raw; markup stays literal."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings

from tests.probe.test_terminal_text import RAW, hostile, hostile_document
from tui.launch import saved_session_app

ESC_OR_C1 = re.compile("[\x1b\x07\x80-\x9f]")


async def _screen(path: Path, tmp_path: Path, read_screen) -> str:
    app = saved_session_app(path, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        return read_screen(app)


async def test_a_hostile_loaded_session_shows_escaped_text(tmp_path: Path, read_screen) -> None:
    text = "\x1b]0;pwned\x07\x1b[2J\x9b31m[bold]b[/]\u202e"
    path = tmp_path / "hostile\x1b[2J.json"
    path.write_text(json.dumps(hostile_document(text)))
    shown = await _screen(path, tmp_path, read_screen)
    assert not ESC_OR_C1.search(shown) and not RAW.search(shown.replace("\n", ""))
    assert "\\x1b]0;pwned" in shown and "[bold]b[/]" in shown     # visible, markup literal


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=hostile)
async def test_any_hostile_string_reaches_no_panel_raw(tmp_path: Path, read_screen,
                                                       text: str) -> None:
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(hostile_document(text)))
    shown = await _screen(path, tmp_path, read_screen)
    assert not ESC_OR_C1.search(shown)
