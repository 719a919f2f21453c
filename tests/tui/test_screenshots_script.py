"""`python -m tools.screenshots` redraws saved sessions (the README's are real recordings)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tools.screenshots import write_all

SESSIONS = Path(__file__).resolve().parents[2] / "screenshots" / "sessions"


def test_a_saved_session_is_redrawn_read_only(tmp_path):
    session = SESSIONS / "2-compiling.json"
    written = asyncio.run(write_all([session], tmp_path / "shots", (80, 24)))
    assert [p.name for p in written] == ["2-compiling-80x24.svg"]
    svg = written[0].read_text()
    assert svg.startswith("<svg") and "read-only" in svg


def test_the_readme_pictures_are_the_recorded_sessions():
    """The front page shows one recorded session; docs/dashboard.md shows every one."""
    root = SESSIONS.parents[1]
    readme = (root / "README.md").read_text()
    dashboard = (root / "docs" / "dashboard.md").read_text()
    stems = [session.stem for session in sorted(SESSIONS.glob("*.json"))]
    assert any(f"](screenshots/{stem}-live.svg)" in readme for stem in stems)
    for stem in stems:
        assert f"](../screenshots/{stem}-live.svg)" in dashboard, stem
        assert (SESSIONS.parent / f"{stem}-live.svg").exists()
