"""`python -m tui.screenshots` writes the README's SVGs from the synthetic session."""

from __future__ import annotations

import asyncio

from tui.screenshots import SHOTS, write_all


def test_screenshots_are_written(tmp_path):
    names = {"compiling", "snapshot-saved"}
    written = asyncio.run(write_all(tmp_path / "shots", names))
    assert sorted(p.name for p in written) == ["compiling.svg", "snapshot-saved.svg"]
    compiling = (tmp_path / "shots" / "compiling.svg").read_text()
    assert compiling.startswith("<svg") and "compiling…&#160;23&#160;s" in compiling
    saved = (tmp_path / "shots" / "snapshot-saved.svg").read_text()
    assert "session&#160;saved" in saved            # the toast the user sees
    assert {s.name for s in SHOTS} >= {"baseline", "compiling", "after-bucketing",
                                       "snapshot-saved"}
