"""The dashboard never promises what the session's journal cannot deliver."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from probe.common.errors import BadInput
from probe.engine.state_files import new_journal
from probe.session_store.journal import JournaledSession, JournalWriter
from tests.fake_engine import FakeEngine
from tui.launch import launch


async def _toasts(make_app, until, engine: FakeEngine) -> list[tuple[str, str]]:
    app = make_app(engine)
    said: list[tuple[str, str]] = []
    app.say = lambda text, severity="information", **kw: said.append((text, severity))  # type: ignore[method-assign]
    async with app.run_test() as pilot:
        engine.die("the engine process exited (code -9)", exit_code=-9)
        await until(pilot, lambda: app.engine_state == "failed")
    return said


async def test_no_journal_is_said_at_the_start_and_the_crash_promises_nothing(make_app, until):
    engine = FakeEngine()
    engine.journal_problem = "no session journal: /state/infertop is not a directory"
    said = await _toasts(make_app, until, engine)
    assert said[0][1] == "warning" and said[0][0].startswith(engine.journal_problem)
    crash = next(t for t, s in said if s == "error")
    assert "cannot be saved (no session journal: /state/infertop is not a directory)" in crash
    assert "Everything served is kept" not in crash


async def test_a_journal_with_a_session_keeps_the_promise(make_app, until, tmp_path):
    journal = new_journal(tmp_path / "state")
    writer = JournalWriter(journal)
    JournaledSession(writer)
    writer.header(1000.0, {})
    said = await _toasts(make_app, until, FakeEngine(journal_path=journal))
    assert not [t for t, s in said if s == "warning"]
    assert any("Everything served is kept: s saves it" in t for t, s in said if s == "error")


def _args(tmp_path: Path, snapshot_dir: Path) -> argparse.Namespace:
    return argparse.Namespace(model="t5-tiny", trace="chat", device="cpu", opt=[], speed=1.0,
                              buckets=None, requests=None, load=None,
                              snapshot_dir=str(snapshot_dir))


@pytest.mark.parametrize("make, message", [
    (lambda p: p.write_text("x"), "it exists and is not a folder"),
    (lambda p: None, "does not exist"),
])
def test_a_bad_snapshot_dir_is_refused_at_the_start_in_s_words(tmp_path, make, message):
    from tui.snapshot_files import snapshot_folder_problem
    target = tmp_path / "snaps" if message != "does not exist" else tmp_path / "no" / "snaps"
    make(target)
    with pytest.raises(BadInput) as refused:
        launch(_args(tmp_path, target))
    assert str(refused.value) == snapshot_folder_problem(target)     # what `s` would say
    assert str(refused.value).startswith(f"--snapshot-dir {target}: cannot write: ")
    assert message in str(refused.value)
