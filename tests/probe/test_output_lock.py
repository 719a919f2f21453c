"""`--out` is held for the run: a second writer is refused at its start, naming the first."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from probe.checks.output_lock import OutputLock
from probe.common.errors import BadInput

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
