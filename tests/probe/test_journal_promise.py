"""The dashboard promises only what the journal can deliver: said at the start when the state
folder takes no journal, and in the toast when the engine stops."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from probe.contract.protocol import JOURNAL_STOPPED
from probe.engine.process.engine_process import EngineClient
from probe.session_store.journal_promise import journal_promise


def test_no_journal_promises_nothing():
    promise = journal_promise(None, "no session journal: /s is not a directory")
    assert not promise.kept and not promise.partial
    assert "cannot be saved (no session journal: /s is not a directory)" in promise.after_crash()
    assert "Everything served is kept" not in promise.after_crash()


def test_an_empty_journal_promises_nothing(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_text("")
    assert "ended before its session began" in journal_promise(str(path), None).after_crash()


def test_a_journal_with_its_header_keeps_everything_unless_it_stopped(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_text(json.dumps({"kind": "session", "value": {"started_unix": 1.0}}) + "\n")
    assert journal_promise(str(path), None).kept
    stopped = journal_promise(str(path), None, f"session journal x: No space left on device: "
                                               f"{JOURNAL_STOPPED}")
    assert stopped.partial and "not what came after" in stopped.after_crash()


@pytest.mark.parametrize("kind", ["symlink", "file"])
def test_an_unusable_state_folder_is_known_before_the_dashboard_opens(tmp_path, monkeypatch,
                                                                      kind):
    state = tmp_path / "state"
    state.mkdir()
    if kind == "symlink":
        (tmp_path / "elsewhere").mkdir()
        (state / "infertop").symlink_to(tmp_path / "elsewhere")
    else:
        (state / "infertop").write_text("")
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    client = EngineClient.__new__(EngineClient)       # no engine: only its journal
    client.journal_path = client.journal_problem = client._journal_stopped = None
    problem = client.open_journal()
    assert problem and problem.startswith("no session journal: ") and "is not a directory" in problem
    assert not client.journal_promise().kept


def test_a_usable_state_folder_gets_a_journal(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    client = EngineClient.__new__(EngineClient)
    client.journal_path = client.journal_problem = client._journal_stopped = None
    assert client.open_journal() is None and Path(client.journal_path).exists()
    os.unlink(client.journal_path)
