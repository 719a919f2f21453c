"""The engine in its own process: live snapshots arrive, commands apply, death is reported."""

import argparse
import time

import pytest

from probe import protocol
from probe.engine_process import EngineClient, config_from_args
from probe.options import OptConfig


def wait_for(client: EngineClient, predicate, timeout: float = 120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        event = client.poll(0.2)
        if event is not None and predicate(event):
            return event
    raise AssertionError("no such event before the timeout")


@pytest.mark.slow
def test_engine_process_publishes_and_obeys(tmp_path):
    args = argparse.Namespace(model="t5-tiny", trace="chat", device="cpu", opt=[], speed=20.0,
                              buckets=None, requests=None, max_input=512, max_output=32)
    client = EngineClient(config_from_args(args))
    client.start()
    try:
        live = wait_for(client, lambda e: isinstance(e, protocol.Live) and e.snapshot.recent)
        assert live.snapshot.options == OptConfig() and live.snapshot.replay.trace == "chat"
        wanted = OptConfig(decode="fullgraph")
        client.send(protocol.SetOptions(wanted))
        wait_for(client, lambda e: isinstance(e, protocol.Live) and e.snapshot.options == wanted)
        path = tmp_path / "s.json"
        client.send(protocol.SaveSnapshot(str(path)))
        saved = wait_for(client, lambda e: isinstance(e, (protocol.SnapshotSaved,
                                                          protocol.SnapshotFailed)))
        assert isinstance(saved, protocol.SnapshotSaved) and path.exists()
        client._process.kill()
        failed = wait_for(client, lambda e: isinstance(e, protocol.EngineFailed), timeout=10)
        assert "exited" in failed.error
        client.restart()
        wait_for(client, lambda e: isinstance(e, protocol.Live) and e.snapshot.options == wanted)
    finally:
        client.stop()
