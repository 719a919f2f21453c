"""The engine in its own process: live views arrive, commands apply, death is reported;
it starts whatever the workload's size, a stuck one is killed, and a restart continues the
session (same clock, same records, the crash marked)."""

from __future__ import annotations

import argparse
import os
import signal
import time
from dataclasses import replace

import pytest

import engine_targets
from probe.contract import protocol
from probe.contract.options import OptConfig
from probe.contract.settings import EngineSettings
from probe.engine.process.engine_process import EngineClient, EngineLaunch, launch_from_args
from probe.engine.workload_setup import prepare_workload
from probe.session_store.snapshot import read_document, session_data
from workloads.trace_records import Trace


def wait_for(client: EngineClient, predicate, timeout: float = 180.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        event = client.poll(0.2)
        if event is not None and predicate(event):
            return event
    raise AssertionError("no such event before the timeout")


def big_workload(megabytes: float = 2.0):
    """The chat workload with its trace repeated until it pickles to about `megabytes`."""
    import pickle
    workload = prepare_workload("chat", max_output=8)
    base, requests = workload.trace.requests, []
    while len(pickle.dumps(requests)) < megabytes * 1e6:
        lap = len(requests) // len(base)
        requests.extend(replace(r, timestamp_ms=r.timestamp_ms + lap * 5e6,
                                id=f"big-{lap}-{r.id}", tag="padding " * 8) for r in base)
    return replace(workload, trace=Trace("big", tuple(requests)))


def config(workload=None, **changes) -> EngineLaunch:
    workload = workload or prepare_workload("chat", max_output=8)
    settings = EngineSettings(model="t5-tiny", device="cpu", bucket_edges=workload.bucket_edges,
                              max_new_tokens=workload.max_new_tokens, threads=1)
    return replace(EngineLaunch(settings, OptConfig(), workload, "chat", speed=20.0),
                   **changes)


def test_a_megabyte_workload_goes_through_the_pipe_not_the_spawn_arguments():
    workload = big_workload(2.0)
    client = EngineClient(config(workload), target=engine_targets.reports_workload)
    client.start()
    try:
        said = wait_for(client, lambda e: isinstance(e, protocol.EngineLoading), timeout=60)
    finally:
        client.stop()
    assert said.text == (f"spawn arguments held none; the pipe brought "
                         f"{len(workload.trace.requests)} requests")
    assert not client.is_alive()


def test_an_engine_that_cannot_start_is_reported_with_its_exit_code():
    client = EngineClient(config(big_workload(0.5)), target=engine_targets.exits_at_once)
    client.start()
    try:
        failed = wait_for(client, lambda e: isinstance(e, protocol.EngineFailed), timeout=60)
    finally:
        client.stop()
    assert "exited (code 3)" in failed.error and "its log:" in failed.error
    assert client.poll(0.0) is None                      # said once


def test_a_stuck_engine_is_killed_by_stop(monkeypatch):
    import probe.engine.process.engine_process as engine_process
    monkeypatch.setattr(engine_process, "STOP_WAIT_S", 0.2)
    client = EngineClient(config(big_workload(0.5)), target=engine_targets.never_reads)
    client.start()
    process = client._process
    client.send(protocol.SetOptions(OptConfig(compile="default")))   # queued, never blocks
    client.stop()                                        # Shutdown unread: killed
    assert not process.is_alive() and process.exitcode == -signal.SIGKILL
    client.stop()                                        # twice is harmless


def test_a_bad_model_or_device_is_refused_before_torch_is_imported():
    import subprocess
    import sys
    code = ("import argparse, sys\n"
            "from probe.engine.process.engine_process import launch_from_args\n"
            "from probe.common.errors import BadInput\n"
            "for model, device in (('no-such-model', 'cpu'), ('t5-tiny', 'gpu:0')):\n"
            "    args = argparse.Namespace(model=model, device=device, trace='chat', opt=[],\n"
            "                              speed=None)\n"
            "    try:\n"
            "        launch_from_args(args)\n"
            "    except BadInput as exc:\n"
            "        print(exc)\n"
            "print('torch' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    model_error, device_error, torch_loaded = result.stdout.splitlines()
    assert "'no-such-model' is not a preset (t5-small, t5-tiny)" in model_error
    assert device_error == "--device 'gpu:0' is not a device; use auto, cpu, cuda or cuda:N"
    assert torch_loaded == "False"


@pytest.mark.slow
def test_engine_process_publishes_and_obeys(tmp_path):
    args = argparse.Namespace(model="t5-tiny", trace="chat", device="cpu", opt=[], speed=20.0,
                              buckets=None, requests=None, max_input=512, max_output=32)
    client = EngineClient(launch_from_args(args))
    client.start()
    try:
        live = wait_for(client, lambda e: isinstance(e, protocol.EngineLive) and e.view.recent)
        assert live.view.options == OptConfig() and live.view.replay.trace == "chat"
        wanted = OptConfig(decode="fullgraph")
        client.send(protocol.SetOptions(wanted))
        wait_for(client, lambda e: isinstance(e, protocol.EngineLive) and e.view.options == wanted)
        path = tmp_path / "s.json"
        client.send(protocol.SaveSnapshot(str(path)))
        saved = wait_for(client, lambda e: isinstance(e, (protocol.SnapshotSaved,
                                                          protocol.SnapshotFailed)))
        assert isinstance(saved, protocol.SnapshotSaved) and path.exists()
        client._process.kill()
        failed = wait_for(client, lambda e: isinstance(e, protocol.EngineFailed), timeout=60)
        assert "exited" in failed.error
        client.restart()
        wait_for(client, lambda e: isinstance(e, protocol.EngineLive) and e.view.options == wanted)
    finally:
        client.stop()


@pytest.mark.slow
def test_a_bad_model_in_the_engine_is_engine_down_with_the_reason():
    client = EngineClient(config(settings=EngineSettings(model="t5-tiny", device="cuda:7")))
    client.start()
    try:
        failed = wait_for(client, lambda e: isinstance(e, protocol.EngineFailed))
    finally:
        client.stop()
    assert failed.error.startswith("the engine could not start: BadInput: --device cuda:7")


@pytest.mark.slow
def test_after_kill_9_a_restart_continues_the_session(tmp_path):
    client = EngineClient(config(big_workload(2.0), speed=50.0))
    client.start()
    try:
        before = wait_for(client, lambda e: isinstance(e, protocol.EngineLive)
                          and len(e.view.recent) >= 3).view
        os.kill(client._process.pid, signal.SIGKILL)
        wait_for(client, lambda e: isinstance(e, protocol.EngineFailed), timeout=60)

        down = session_data(read_document(client.write_snapshot(str(tmp_path / "down.json"))))
        assert {r.id for r in before.recent} <= {r.id for r in down.records}
        # every request dispatched has a record: served, or failed as lost in the crash
        assert sorted(r.seq for r in down.records) == list(range(len(down.records)))
        assert down.notices[-1].text.startswith("the engine died (exit code -9)")
        assert down.notices[-1].t_s >= before.t_s

        client.restart()
        after = wait_for(client, lambda e: isinstance(e, protocol.EngineLive) and any(
            r.seq >= len(down.records) for r in e.view.recent)).view
        assert after.t_s > down.notices[-1].t_s                     # the same clock, going on
        assert {r.id for r in down.records} <= {r.id for r in after.recent}
        assert any(n.text.startswith("engine restarted after it died (exit code -9)")
                   for n in after.notices)
        path = tmp_path / "after.json"
        client.send(protocol.SaveSnapshot(str(path)))
        wait_for(client, lambda e: isinstance(e, protocol.SnapshotSaved))
    finally:
        client.stop()
    saved = session_data(read_document(path))
    seqs = [r.seq for r in saved.records]
    assert len(seqs) == len(set(seqs))                       # resumed, not replayed from 0
    assert set(range(len(down.records))) <= set(seqs)
    lost = [r for r in saved.records if r.error and r.error.startswith("lost:")]
    assert all("died (exit code -9) before serving it" in r.error for r in lost)


# Counts the POSIX semaphores a tqdm bar creates in a fresh interpreter, after `setup`.
_PROGRESS_BAR_SEMAPHORES = """
import multiprocessing.synchronize as synchronize
created = []
original = synchronize.SemLock.__init__
def counting(self, *args, **kwargs):
    created.append(args)
    original(self, *args, **kwargs)
synchronize.SemLock.__init__ = counting
{setup}
from tqdm import tqdm
for _ in tqdm(range(3), disable=False):
    pass
print(len(created))
"""


@pytest.mark.parametrize("setup, semaphores", [
    ("", 1),   # the control: tqdm's default lock is a multiprocessing RLock
    ("from probe.engine.process.engine_child import prepare_engine_process\n"
     "from tests_engine_config import CONFIG\nprepare_engine_process(CONFIG)", 0),
])
def test_the_engine_process_draws_progress_bars_without_a_semaphore(tmp_path, setup, semaphores):
    """A semaphore made in the engine is registered with the dashboard's resource tracker, and an
    engine killed mid-compile (inductor draws tqdm bars) leaves it: "leaked semaphore" printed
    on the terminal after the dashboard quit."""
    import subprocess
    import sys
    (tmp_path / "tests_engine_config.py").write_text(
        "from probe.engine.process.engine_process import EngineLaunch\n"
        "from probe.contract.options import OptConfig\n"
        "from probe.contract.settings import EngineSettings\n"
        "CONFIG = EngineLaunch(EngineSettings(model='t5-tiny', device='cpu'), OptConfig(),"
        f" None, 'chat', log_path={str(tmp_path / 'engine.log')!r})\n")
    (tmp_path / "engine.log").touch()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    done = subprocess.run([sys.executable, "-c", _PROGRESS_BAR_SEMAPHORES.format(setup=setup)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    # with the engine's set-up, its stdout went to the log
    printed = (tmp_path / "engine.log").read_text() if setup else done.stdout
    assert int(printed.strip().splitlines()[-1]) == semaphores


@pytest.mark.parametrize("window, served", [(None, 50.0), (20.0, 20.0)])
def test_batch_window_reaches_the_engines_settings(window, served):
    """--batch-window MS (what `tune --search` prints for a dynamic batch's window)."""
    args = argparse.Namespace(model="t5-tiny", trace="chat", device="cpu", opt=[], speed=1.0,
                              buckets=None, batch_window=window)
    assert launch_from_args(args).settings.batch_window_ms == served
