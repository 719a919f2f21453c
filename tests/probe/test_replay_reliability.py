"""Nothing `replay` served is lost: SIGTERM and SIGHUP save it (exit 128 + signal), kill -9
leaves a journal `snapshot recover` turns into the session, a full disk is one line naming the
journal; a second writer to the same --out and a metrics port in use are refused at the
start; a closed pipe ends quietly."""

from __future__ import annotations

import errno
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from infertop.cli import main
from probe.checks.output_lock import OutputLock
from probe.contract.options import OptConfig
from probe.session_store.snapshot import read_document, saved_session

REPO = Path(__file__).resolve().parents[2]
REPLAY = [sys.executable, "-m", "infertop", "replay", "--model", "t5-tiny", "--device", "cpu",
          "--trace", "chat", "--max-output", "8", "--requests", "200", "--speed", "4"]
SERVED = re.compile(r"^\[\d+/\d+ served[^]]*\] (chat-\d+) config=c1 .*\)$")
JOURNAL = re.compile(r"^session journal: (\S+) ")


def _start(tmp_path: Path, out: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1",
           "XDG_STATE_HOME": str(tmp_path / "state")}
    return subprocess.Popen([*REPLAY, "--out", str(out)], cwd=tmp_path, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _serve_a_few(child: subprocess.Popen, few: int = 3) -> tuple[list[str], str]:
    """The request ids served, as the progress lines say, once `few` are; and the journal."""
    served, journal = [], ""
    deadline = time.monotonic() + 300
    for line in child.stderr:
        if found := JOURNAL.match(line):
            journal = found[1]
        if found := SERVED.match(line):
            served.append(found[1])
        if len(served) >= few or time.monotonic() > deadline:
            break
    return served, journal


def _ids(path: Path, ok_only: bool = False) -> list[str]:
    records = json.loads(path.read_text())["requests"]
    return [r["id"] for r in records if not (ok_only and r["error"])]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_save_what_was_served(tmp_path, signum):
    out = tmp_path / "run.json"
    child = _start(tmp_path, out)
    served, journal = _serve_a_few(child)
    child.send_signal(signum)
    rest, err = child.communicate(timeout=300)
    served += [m[1] for line in err.splitlines() if (m := SERVED.match(line))]
    assert child.returncode == 128 + signum, err
    assert set(served) == set(_ids(out, ok_only=True))      # what was served, all of it
    assert rest.splitlines()[-1].startswith(
        f"stopped by {signal.Signals(signum).name}; wrote {out}: ")
    assert not Path(journal).exists()                        # saved: the journal is done
    assert not (tmp_path / ".run.json.lock").exists()


@pytest.mark.timeout(600)
def test_after_kill_9_the_journal_recovers_every_request_served(tmp_path, capsys):
    out = tmp_path / "run.json"
    child = _start(tmp_path, out)
    served, journal = _serve_a_few(child)
    child.kill()
    child.communicate(timeout=60)
    assert not out.exists() and Path(journal).exists()
    recovered = tmp_path / "recovered.json"
    assert main(["snapshot", "recover", journal, "-o", str(recovered)]) == 0
    ok = _ids(recovered, ok_only=True)
    assert set(served) <= set(ok) and len(ok) <= len(served) + 8   # + one batch in flight
    document = json.loads(recovered.read_text())
    lost = [r for r in document["requests"] if r["error"]]
    assert all(r["error"].startswith("lost: ") for r in lost)
    assert "recovered from its journal" in document["notices"][-1]["text"]
    assert capsys.readouterr().out.startswith(f"wrote {recovered}: {len(ok)} served, ")


def test_a_full_disk_is_one_line_and_the_journal_keeps_what_was_served(tmp_path, capsys,
                                                                       monkeypatch):
    import probe.engine.process.replay_and_save as replay_and_save

    def full(path, document):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
    monkeypatch.setattr(replay_and_save, "write_json_atomic", full)
    out = tmp_path / "run.json"
    code = main(["replay", "--model", "t5-tiny", "--device", "cpu", "--trace", "chat",
                 "--requests", "3", "--speed", "1000", "--max-output", "4", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    last = err.strip().splitlines()[-1]
    journal = re.search(r"kept in (\S+):", last)[1]
    assert last == (f"infertop: error: --out {out}: cannot write: No space left on device; the "
                    f"3 requests served are kept in {journal}: write them with `infertop "
                    f"snapshot recover {journal} -o OTHER.json`")
    monkeypatch.undo()
    recovered = tmp_path / "recovered.json"
    assert main(["snapshot", "recover", journal, "-o", str(recovered)]) == 0
    assert len(_ids(recovered, ok_only=True)) == 3
    assert not out.exists() and not (tmp_path / ".run.json.lock").exists()


def test_a_second_writer_to_the_same_out_is_refused_before_the_model(tmp_path, capsys):
    out = tmp_path / "same.json"
    with OutputLock(out):
        code = main(["replay", "--model", "t5-tiny", "--device", "cpu", "--requests", "1",
                     "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1] == (f"infertop: error: --out {out}: another infertop (pid "
                                     f"{os.getpid()}) is writing it; give another --out or "
                                     f"wait for it to end")
    assert not out.exists() and not (tmp_path / "state").exists()   # no journal: no model


def test_a_metrics_port_in_use_is_refused_before_the_model(tmp_path, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        code = main(["replay", "--model", "t5-tiny", "--device", "cpu", "--requests", "1",
                     "--metrics-port", str(port), "--out", str(tmp_path / "x.json")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith(f"infertop: error: --metrics-port {port}: cannot listen on "
                             f"127.0.0.1:{port} (")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("argv", [["trace", "stats", "chat"], ["snapshot", "show", "SNAPSHOT"],
                                  ["--help"]])
def test_a_closed_pipe_ends_quietly(tmp_path, argv):
    snapshot = tmp_path / "s.json"
    snapshot.write_text(json.dumps({"schema_version": 1, "requests": []}))
    argv = [str(snapshot) if a == "SNAPSHOT" else a for a in argv]
    read, write = os.pipe()
    os.close(read)                              # `| head` that has read all it wanted
    done = subprocess.run([sys.executable, "-m", "infertop", *argv], stdout=write,
                          stderr=subprocess.PIPE, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    os.close(write)
    assert (done.returncode, done.stderr) == (0, "")


# -- Ctrl-C on a replay: the session records it ------------------------------------------------

class _Clock:
    def now_s(self) -> float:
        return 100.0


class _Engine:
    """What serve_and_save reads of an engine: its session and clock."""
    def __init__(self) -> None:
        from probe.contract.session import Session
        self.session = Session()
        self.clock = _Clock()


class _Loop:
    """Serves `served` requests, then the user presses Ctrl-C; ends at the stop, as the
    serving loop does."""
    def __init__(self, engine: _Engine, served: int, signum: int) -> None:
        self.engine, self.served, self.signum = engine, served, signum

    def run(self, stop: threading.Event) -> None:
        from tests.conftest import synthetic_record
        config = self.engine.session.config_id(OptConfig())
        for i in range(self.served):
            self.engine.session.add_record(synthetic_record(f"r{i}", i, latency_ms=50.0,
                                                                config_id=config))
        os.kill(os.getpid(), self.signum)
        assert stop.is_set()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_replay_is_recorded_in_its_session(tmp_path, capsys, signum):
    from infertop.commands.doctor import diagnosis_of
    from probe.engine.process.replay_and_save import serve_and_save
    from probe.session_store.snapshot import snapshot_document
    from probe.session_store.snapshot_report import show

    engine, out = _Engine(), tmp_path / "run.json"
    document = lambda: snapshot_document(  # noqa: E731
        engine.session.freeze(), environment={"device": "cpu"},
        model={"name": "t5-tiny"}, trace={"name": "chat", "requests": 400, "asked": 40})
    result = serve_and_save(engine, _Loop(engine, 8, signum), out, document, asked=40)
    assert result.exit_status == 128 + signum
    data = saved_session(read_document(out))
    (notice,) = data.notices
    assert notice.level == "warning" and "8 of 40 asked" in notice.text
    assert "interrupted by" in notice.text
    assert notice.text in show(str(out))                         # snapshot show says it
    _, report = diagnosis_of(str(out))
    traffic = report.checklist[0]
    assert traffic.evidence.startswith("8 of 40 requests served")  # of asked, not of 20
