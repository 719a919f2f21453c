"""Folders infertop cannot use degrade with one line: a state folder that is a file (the log
goes to temp, no journal), an inductor cache that is a file (replaced, said once)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def test_a_state_folder_that_is_a_file_gives_a_log_in_temp_and_no_journal(tmp_path, monkeypatch,
                                                                           capsys):
    from probe.engine.state_files import (
        new_log_or_temporary,
        new_replay_journal,
        state_folder_problem,
    )
    blocker = tmp_path / "state"
    blocker.write_text("")
    monkeypatch.setenv("XDG_STATE_HOME", str(blocker))
    log = new_log_or_temporary()
    assert Path(log).exists() and not log.startswith(str(blocker))
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"XDG_STATE_HOME={blocker}" in err
    with pytest.raises(OSError) as caught:
        new_replay_journal()
    assert f"XDG_STATE_HOME={blocker}" in state_folder_problem(caught.value)
    os.unlink(log)


def test_an_unusable_inductor_cache_is_replaced_with_one_warning(tmp_path, monkeypatch, capsys):
    from probe.checks.inductor_cache import usable_inductor_cache
    blocker = tmp_path / "cache"
    blocker.write_text("")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(blocker))
    usable_inductor_cache()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"TORCHINDUCTOR_CACHE_DIR={blocker}" in err
    assert os.path.isdir(os.environ["TORCHINDUCTOR_CACHE_DIR"])
    assert usable_inductor_cache() is None          # the fallback is usable: said once
