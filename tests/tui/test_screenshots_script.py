"""`python -m tui.screenshots` redraws saved sessions (the README's are real recordings)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tui.screenshots import write_all

SESSIONS = Path(__file__).resolve().parents[2] / "screenshots" / "sessions"


def test_a_saved_session_is_redrawn_read_only(tmp_path):
    session = SESSIONS / "2-compiling.json"
    written = asyncio.run(write_all([session], tmp_path / "shots", (80, 24)))
    assert [p.name for p in written] == ["2-compiling-80x24.svg"]
    svg = written[0].read_text()
    assert svg.startswith("<svg") and "read-only" in svg


def test_the_readme_pictures_are_the_recorded_sessions():
    readme = (SESSIONS.parents[1] / "README.md").read_text()
    for session in sorted(SESSIONS.glob("*.json")):
        assert f"screenshots/{session.stem}-live.svg" in readme, session.stem
        assert (SESSIONS.parent / f"{session.stem}-live.svg").exists()
