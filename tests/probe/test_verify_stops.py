"""`doctor --verify` stops as replay and tune do (issue #50): SIGTERM, SIGINT and SIGHUP end it
with 128 + the signal even while a step cannot be cut short (a planted compile that no signal
reaches, as a torch.compile in C), leaving no `infertop-verify-*` folder in TMPDIR and keeping
the runs that finished in --verify-runs; --verify-runs follows the output rule and its lock
(one line, exit 2, before any model loads); torch's and torchao's own lines go to the log."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import MappingProxyType

import pytest

from infertop.cli import main
from probe.checks.output_lock import OutputLock
from probe.contract.options import parse_opts
from probe.contract.session import ConfigEntry, SessionData
from probe.session_store.snapshot import snapshot_document
from tests.probe.doctor_records import record

REPO = Path(__file__).resolve().parents[2]
PLANTED = "planted: a compile that cannot be cut short"


def queued_session(path: Path) -> Path:
    """A t5-tiny session whose queue makes the doctor's next step batching=continuous."""
    records = [record(i, arrival_s=0.001 * i, start_s=0.3 * i) for i in range(20)]
    data = SessionData(records=tuple(records), configs=MappingProxyType(
        {"c1": ConfigEntry("c1", parse_opts(()))}))
    document = snapshot_document(data, environment={"device": "cpu"},
                                 model={"name": "t5-tiny", "source": "t5-tiny"}, trace={})
    path.write_text(json.dumps(document))
    return path


# -- --verify-runs: the output rule and the lock, before any model loads --------------------------

@pytest.fixture
def no_model(monkeypatch):
    """A refusal must come before the verification starts (and so before the model loads)."""
    def refused(*args, **kwargs):
        raise AssertionError("the verification started before --verify-runs was checked")
    monkeypatch.setattr("infertop.commands.doctor.run_verify", refused)


@pytest.mark.parametrize("given, says", [
    ("afile", "it exists and is not a folder"),
    ("no/such/runs", "does not exist"),
])
def test_verify_runs_is_refused_in_one_line_by_the_output_rule(tmp_path, capsys, no_model, given,
                                                                says):
    session = queued_session(tmp_path / "s.json")
    (tmp_path / "afile").write_text("x")
    runs = tmp_path / given
    assert main(["doctor", str(session), "--verify", "--verify-runs", str(runs)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.strip().splitlines()
    assert line.startswith(f"infertop: error: --verify-runs {runs}") and says in line
    assert not (tmp_path / "no").exists()           # no parents made


def test_two_verifications_on_one_runs_folder_cannot_both_write(tmp_path, capsys, no_model):
    session = queued_session(tmp_path / "s.json")
    runs = tmp_path / "runs"
    with OutputLock(runs, "--verify-runs"):         # another doctor --verify holds it
        assert main(["doctor", str(session), "--verify", "--verify-runs", str(runs)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "--verify-runs" in line and "another infertop" in line


# -- a stop at the worst moment: a compile that swallows it ---------------------------------------

STUBBORN = textwrap.dedent(f"""
    import signal, sys, time
    import probe.tune.verify_step as verify_step

    def stubborn(job, context, workload, *, runs_dir, named_dir, stop, say):
        (runs_dir / "00_finished_run.json").write_text("{{}}")     # a run that finished
        print({PLANTED!r}, file=sys.stderr, flush=True)
        # a compile in C: no Python handler runs until it returns, which it never does
        signal.pthread_sigmask(signal.SIG_BLOCK, {{signal.SIGINT, signal.SIGTERM,
                                                  signal.SIGHUP}})
        while True:
            time.sleep(0.05)

    verify_step.evaluate = stubborn
    from infertop.cli import main
    sys.argv = ["infertop", *sys.argv[1:]]
    sys.exit(main())
""")


def _stop_mid_compile(tmp_path: Path, signum: int, *extra: str) -> tuple[int, str, float]:
    session = queued_session(tmp_path / "s.json")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1",
           "TMPDIR": str(temporary), "XDG_STATE_HOME": str(tmp_path / "state")}
    child = subprocess.Popen([sys.executable, "-c", STUBBORN, "doctor", str(session), "--verify",
                              "--verify-requests", "4", *extra], cwd=tmp_path, env=env,
                             text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stderr is not None
    seen = []
    for line in child.stderr:
        seen.append(line)
        if PLANTED in line:
            break
    assert any(PLANTED in line for line in seen), "".join(seen)
    signalled = time.monotonic()
    child.send_signal(signum)
    out, err = child.communicate(timeout=120)
    return child.returncode, "".join(seen) + err, time.monotonic() - signalled


@pytest.mark.timeout(600)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_stop_mid_compile_ends_with_128_plus_the_signal_and_no_temporary_folder(tmp_path,
                                                                                   signum):
    status, err, _ = _stop_mid_compile(tmp_path, signum)
    assert status == 128 + signum, err
    name = signal.Signals(signum).name
    assert f"doctor --verify: stopped by {name} before the comparison" in err
    assert not list((tmp_path / "tmp").glob("infertop-verify-*"))
    assert "Traceback" not in err


@pytest.mark.timeout(600)
def test_a_stop_keeps_the_runs_that_finished_in_verify_runs(tmp_path):
    runs = tmp_path / "runs"
    status, err, _ = _stop_mid_compile(tmp_path, signal.SIGTERM, "--verify-runs", str(runs))
    assert status == 143, err
    assert [p.name for p in runs.iterdir()] == ["00_finished_run.json"]
    assert f"the 1 run(s) that finished are in {runs}" in err
    assert not (tmp_path / ".runs.lock").exists()       # the lock let go
