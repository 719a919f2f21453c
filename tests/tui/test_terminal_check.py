"""`infertop 2>log`: the dashboard draws on stderr; with none it says so in one line, exit 2."""

from __future__ import annotations

import io
import subprocess
import sys


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_no_problem_on_a_terminal():
    from tui.terminal_check import no_terminal_problem
    assert no_terminal_problem(_Tty()) is None


def test_stderr_not_a_terminal_is_one_line_why():
    from tui.terminal_check import no_terminal_problem, say_no_terminal
    problem = no_terminal_problem(io.StringIO())
    assert problem is not None and "stderr" in problem and "\n" not in problem
    out, err = _Tty(), io.StringIO()
    say_no_terminal(problem, out, err)
    assert out.getvalue() == err.getvalue() == problem + "\n"


def test_infertop_with_stderr_redirected_exits_2_at_once(tmp_path):
    log = tmp_path / "log"
    with log.open("w") as stderr:
        done = subprocess.run([sys.executable, "-m", "infertop", "--model", "t5-tiny"],
                              stdout=subprocess.PIPE, stderr=stderr, text=True, timeout=120)
    assert done.returncode == 2
    assert "draws on stderr, which is not a terminal" in log.read_text()
    assert len(log.read_text().splitlines()) == 1
