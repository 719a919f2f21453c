"""`infertop replay`'s contract with scripts: exit 0 all served, 1 some failed (snapshot still
written, last line says how many and why), 130 interrupted (what was served is saved); token
ids on request; Prometheus metrics while it runs."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from infertop.cli import main
from probe.engine.switchboard import Switchboard

REPO = Path(__file__).resolve().parents[2]
BASE = ["replay", "--model", "t5-tiny", "--trace", "chat", "--device", "cpu",
        "--opt", "decode=fullgraph", "--max-output", "8", "--speed", "1000"]


def test_all_served_exits_0_and_tokens_are_kept_on_request(tmp_path, capsys):
    out = tmp_path / "run.json"
    assert main([*BASE, "--requests", "5", "--tokens", "--out", str(out)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == f"wrote {out}: 5 served"
    records = json.loads(out.read_text())["requests"]
    assert all(len(r["tokens"]) == r["output_tokens"] for r in records)


@pytest.mark.timeout(300)
def test_a_closed_loop_replay_serves_every_request(tmp_path, capsys):
    """--concurrency N dispatches through the journal's replayer: each finished request must
    reach the closed loop through it, or after N requests the replay waits forever (it did:
    the serving loop told only a bare ClosedLoopReplayer; mypy found it)."""
    out = tmp_path / "run.json"
    assert main([*BASE, "--concurrency", "2", "--requests", "5", "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == f"wrote {out}: 5 served"


def test_without_tokens_only_the_drift_sample_keeps_them(tmp_path):
    out = tmp_path / "run.json"
    assert main([*BASE, "--requests", "9", "--out", str(out)]) == 0
    document = json.loads(out.read_text())
    kept = [r["id"] for r in document["requests"] if "tokens" in r]
    assert len(kept) == 2                              # seq 0 and 8: 1 in 8
    assert sorted(document["reference_tokens"]) == sorted(kept)


def test_failed_requests_exit_1_with_the_count_and_first_reason(tmp_path, capsys, monkeypatch):
    real = Switchboard.decoder

    def flaky(self, options):
        decode = real(self, options)

        def maybe_fail(ids, mask, new_tokens, stops=frozenset()):
            if ids.shape[1] % 2:                    # odd input lengths fail
                raise RuntimeError("injected fault")
            return decode(ids, mask, new_tokens, stops)
        return maybe_fail
    monkeypatch.setattr(Switchboard, "decoder", flaky)
    out = tmp_path / "run.json"
    assert main([*BASE, "--requests", "8", "--out", str(out)]) == 1
    records = json.loads(out.read_text())["requests"]
    failed = [r for r in records if r["error"]]
    assert len(records) == 8 and failed
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == (f"wrote {out}: {8 - len(failed)} served, {len(failed)} failed "
                    f"(first: RuntimeError: injected fault)")


def _scrape_until(port: int, served: int, timeout_s: float = 120.0) -> tuple[str, float]:
    """The metrics page once its ok-count reaches `served` (the last page read, if never)."""
    deadline = time.monotonic() + timeout_s
    while True:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics") as response:
            text = response.read().decode()
        found = re.search(r'infertop_requests_total\{config="c1",status="ok"\} (\S+)', text)
        count = float(found[1]) if found else 0.0
        if count >= served or time.monotonic() > deadline:
            return text, count
        time.sleep(0.1)


def test_sigint_saves_what_was_served_and_metrics_are_scraped_while_it_runs(tmp_path):
    out = tmp_path / "run.json"
    command = [sys.executable, "-m", "infertop.cli", *BASE[:-2], "--speed", "4", "--requests",
               "200", "--metrics-port", "0", "--out", str(out)]
    child = subprocess.Popen(command, cwd=REPO, stderr=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    port, served, counts = None, 0, []
    deadline = time.monotonic() + 240
    for line in child.stderr:
        assert "_pytree" not in line and "Warning" not in line, line    # import noise kept off
        if time.monotonic() > deadline:
            break
        found = re.search(r"127\.0\.0\.1:(\d+)/metrics", line)
        if found:
            port = int(found[1])
        if " latency=" in line and " config=c1 " in line:
            served += 1
            if port and served in (2, 5):
                # the exporter polls the session about every second, later on a loaded machine:
                # wait until it counts what the progress lines said was served
                text, count = _scrape_until(port, served)
                counts.append(count)
                assert "infertop_request_latency_seconds_bucket" in text
            if served == 5:
                child.send_signal(signal.SIGINT)
                break
    stdout, _ = child.communicate(timeout=120)
    assert child.returncode == 130
    assert len(counts) == 2 and counts[1] >= 5 and counts[0] >= 2 and counts[1] >= counts[0]
    document = json.loads(out.read_text())
    assert len(document["requests"]) >= 5
    assert stdout.strip().splitlines()[-1].startswith(f"interrupted; wrote {out}:")


def test_snapshot_export_from_the_command_line(tmp_path, capsys):
    out = tmp_path / "run.json"
    assert main([*BASE, "--requests", "3", "--out", str(out)]) == 0
    assert main(["snapshot", "export", str(out), "--csv"]) == 0
    assert (tmp_path / "run.requests.csv").exists() and (tmp_path / "run.segments.csv").exists()
    assert main(["snapshot", "export", str(out), "--csv", "-o", str(tmp_path / "x" / "y")]) == 2


def test_the_saved_session_keeps_what_the_panels_cannot_recompute(tmp_path):
    from probe.session_store.snapshot import read_document, saved_live_parts
    out = tmp_path / "run.json"
    assert main([*BASE, "--requests", "2", "--out", str(out)]) == 0
    document = read_document(out)
    sample, roofline = saved_live_parts(document)
    assert sample.kind == "CPU" and sample.mem_total_bytes > 0
    assert roofline is None                 # a headless replay measures no bandwidth
    assert document["settings"]["max_batch"] == 8
