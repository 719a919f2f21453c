"""A full disk names the file, exits 1 and leaves nothing half-written (the atomic writers)."""

from __future__ import annotations

import errno
import os

from infertop.cli import main
from tests.probe.saved_sessions import one_error_line


def test_a_full_disk_names_the_file_exits_1_and_leaves_nothing(tmp_path, monkeypatch, capsys):
    import probe.common.atomic as atomic
    real_open = open

    class Full:
        def __init__(self, handle):
            self.handle = handle

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic, "open", lambda *a, **k: Full(real_open(*a, **k)), raising=False)
    out = tmp_path / "t.jsonl"
    assert main(["trace", "generate", "--profile", "chat", "-n", "3", "-o", str(out)]) == 1
    line = one_error_line(capsys.readouterr().err)
    assert line == f"infertop: error: {out}: No space left on device"
    assert os.listdir(tmp_path) == []
