"""The engine's log (what the dashboard shows in its help screen): a fresh file per engine
start in the per-user state folder, never through a symlink, the newest ten kept."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from probe.engine.process import engine_process
from probe.engine.state_files import KEEP_LOGS, new_log, state_dir


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_the_state_folder_follows_xdg(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert state_dir() == tmp_path / "xdg" / "infertop"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", "relative/path")       # the spec says: ignore it
    assert state_dir() == tmp_path / "home" / ".local" / "state" / "infertop"
    monkeypatch.delenv("XDG_STATE_HOME")
    assert state_dir() == tmp_path / "home" / ".local" / "state" / "infertop"


def test_a_log_is_fresh_private_and_in_a_private_folder(tmp_path):
    first, second = Path(new_log()), Path(new_log())
    folder = tmp_path / "state" / "infertop"                     # conftest's XDG_STATE_HOME
    assert first.parent == second.parent == folder and first != second
    assert mode(folder) == 0o700 and mode(first) == 0o600
    assert first.read_bytes() == b""


def test_only_the_newest_logs_are_kept(tmp_path):
    made = []
    for n in range(KEEP_LOGS + 5):
        made.append(Path(new_log()))
        os.utime(made[-1], (1_000_000 + n, 1_000_000 + n))        # distinct ages
    kept = sorted(p.name for p in made[0].parent.iterdir())
    assert kept == sorted(p.name for p in made[-KEEP_LOGS:])


def test_a_planted_symlink_is_never_written_through(tmp_path, monkeypatch):
    monkeypatch.setattr(engine_process.time, "strftime", lambda _: "20250101-000000")
    folder = tmp_path / "state" / "infertop"
    folder.mkdir(parents=True, mode=0o700)
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    planted = folder / f"engine-20250101-000000-{os.getpid()}-0.log"
    planted.symlink_to(victim)
    path = Path(new_log())
    assert path != planted and path.name.endswith("-1.log") and not path.is_symlink()
    assert victim.read_text() == "keep me"
    with pytest.raises(OSError):          # the child's open refuses a symlink too
        os.open(planted, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)


def test_a_state_folder_that_is_a_symlink_is_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "infertop").symlink_to(elsewhere)
    with pytest.raises(OSError, match="not a directory"):
        new_log()
    assert list(elsewhere.iterdir()) == []


def test_a_loose_state_folder_is_made_private(tmp_path):
    folder = tmp_path / "state" / "infertop"
    folder.mkdir(parents=True, mode=0o755)
    os.chmod(folder, 0o755)
    new_log()
    assert mode(folder) == 0o700
