"""`--out` is held for the run: a second writer is refused at its start, naming the first."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from infertop.cli import main
from probe.checks.output_lock import OutputLock
from probe.common.errors import BadInput
from tests.probe.saved_sessions import journal_of, one_error_line, saved

HOLD = """
import sys, time
from probe.checks.output_lock import OutputLock
lock = OutputLock(sys.argv[1])
print("held", flush=True)
sys.stdin.readline()
lock.release()
"""


def test_a_second_writer_is_refused_with_the_first_ones_pid(tmp_path):
    out = tmp_path / "same.json"
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(out)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(BadInput) as refused:
            OutputLock(out, "--out")
        assert str(refused.value) == (f"--out {out}: another infertop (pid {holder.pid}) is "
                                      f"writing it; give another --out or wait for it to end")
    finally:
        holder.communicate("\n", timeout=30)
    assert not (tmp_path / ".same.json.lock").exists()        # let go: removed
    with OutputLock(out):                                     # and free again
        pass


def test_a_lock_left_by_a_killed_run_is_taken(tmp_path):
    (tmp_path / ".run.json.lock").write_text("12345\n")       # kill -9: the file, no lock
    with OutputLock(tmp_path / "run.json") as lock:
        assert lock.path.read_text() == f"{os.getpid()}\n"
    assert not lock.path.exists()


def test_two_outputs_in_one_folder_do_not_block_each_other(tmp_path):
    with OutputLock(tmp_path / "a.json"), OutputLock(tmp_path / "b.json"):
        pass


# -- every writer of an output takes the lock (issue 37) ---------------------------------------

def test_snapshot_export_takes_the_output_lock(tmp_path, capsys):
    path = saved(tmp_path)
    with OutputLock(tmp_path / "e", "--out"):
        assert main(["snapshot", "export", str(path), "--csv", "-o", str(tmp_path / "e")]) == 2
    assert "another infertop" in one_error_line(capsys.readouterr().err)


def test_snapshot_recover_takes_the_output_lock(tmp_path, capsys):
    path = journal_of(tmp_path)
    with OutputLock(tmp_path / "r.json", "-o"):
        assert main(["snapshot", "recover", path, "-o", str(tmp_path / "r.json")]) == 2
    assert "another infertop" in one_error_line(capsys.readouterr().err)
    assert not (tmp_path / "r.json").exists()


def test_tune_takes_the_output_lock(tmp_path, capsys):
    with OutputLock(tmp_path / "t", "--out"):
        assert main(["tune", "--model", "t5-tiny", "--slo", "latency=8s", "--rate", "1",
                     "--out", str(tmp_path / "t")]) == 2
    assert "another infertop" in one_error_line(capsys.readouterr().err)
