"""The states that stress the text, read off the screen at 120×40 and 80×24: the status line
never wraps (the options stay on the second line), the overload sentence and rates are whole,
failures and both segment rows stay on screen."""

from __future__ import annotations

import pytest

from tests.fake_engine import FakeEngine
from tests.tui.conftest import wait_for
from tui.widgets.throughput import OVERLOADED

STRESSED = ("overloaded", "compiling", "failing", "continuous", "paged", "measured")
SIZES = {"wide": (120, 40), "compact": (80, 24)}


async def screen(make_app, read_screen, at: str, size: tuple[int, int]) -> list[str]:
    """The screen once the segments table has drawn its rows (on a busy machine that can take
    longer than a fixed pause; a layout that never shows them still fails, after 5 s)."""
    app = make_app(FakeEngine(), at=at)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: "now c" in read_screen(app))
        return read_screen(app).splitlines()


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("at", STRESSED)
async def test_the_status_bar_keeps_to_its_lines(make_app, read_screen, at, size):
    lines = await screen(make_app, read_screen, at, SIZES[size])
    assert lines[0].startswith(" ▶ running")
    assert lines[1].lstrip().startswith(("compile=", "decode=", "every option"))
    assert "now c" in "\n".join(lines)                           # segments: the current row
    assert "prev c" in "\n".join(lines) or at == "overloaded"   # … and the previous one


async def test_overload_is_said_whole_at_120x40(make_app, read_screen):
    lines = await screen(make_app, read_screen, "overloaded", SIZES["wide"])
    assert OVERLOADED in lines[0]                                # the status line
    assert sum(OVERLOADED in line for line in lines[2:]) == 1    # and the throughput panel
    assert any("offered 1.46 req/s · capacity 0.91 req/s" in line for line in lines)
    assert any("req/s served · queue 23" in line for line in lines)


@pytest.mark.parametrize("size", SIZES)
async def test_failures_fit(make_app, read_screen, stages, size):
    lines = await screen(make_app, read_screen, "failing", SIZES[size])
    text = "\n".join(lines)
    failed = stages["failing"].replay.failed
    assert f"Failures: {failed} failed · by kind: OutOfMemoryError" in text
    assert "latest req-" in text and "RuntimeError: The size of tensor a" in text
    assert f"failed {failed}" in text or size == "compact"      # throughput detail (wide)


async def test_continuous_batching_says_what_the_engine_changed(make_app, read_screen):
    lines = await screen(make_app, read_screen, "continuous", SIZES["compact"])
    assert "decode=fullgraph!" in lines[1]
    assert lines[2].lstrip().startswith("! decode=fullgraph (asked hf-generate)")
