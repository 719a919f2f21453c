"""The dashboard's engine process killed with -9, the session saved while it is down, then
restarted: the saved-while-down session has the compile ledger and each config's energy entry
the journal held, and the restarted engine's ledger continues it (t5-tiny, the timed
fullgraph decode loop, eager: no compile)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from probe.contract import protocol
from probe.contract.options import parse_opts
from probe.engine.process.engine_process import EngineClient
from probe.session_store.snapshot import read_document, session_data
from tests.probe.test_engine_process import config, wait_for


def test_a_kill_9_keeps_the_ledger_and_the_restart_continues_it(tmp_path):
    client = EngineClient(config(options=parse_opts(["decode=fullgraph"]), speed=50.0))
    client.start()
    try:
        wait_for(client, lambda e: isinstance(e, protocol.EngineLive)
                 and len(e.view.recent) >= 3 and e.view.compile_ledger)
        # the ledger is journaled at most a second after it changed (journal_accounts.py)
        deadline = time.monotonic() + 120.0      # a hang, not a slow machine
        while b'"kind":"compile_ledger"' not in Path(client.journal_path or "").read_bytes():
            assert time.monotonic() < deadline, "no compile_ledger line in the journal"
            time.sleep(0.05)
        os.kill(client._process.pid, signal.SIGKILL)
        wait_for(client, lambda e: isinstance(e, protocol.EngineFailed), timeout=60)
        down = session_data(read_document(client.write_snapshot(str(tmp_path / "down.json"))))
        assert down.compile_ledger and set(down.energy) == {"c1"}
        served_down = len([r for r in down.records if r.ok])

        client.restart()
        wait_for(client, lambda e: isinstance(e, protocol.EngineLive)
                 and len([r for r in e.view.recent if r.ok]) > served_down + 2)
        path = tmp_path / "after.json"
        client.send(protocol.SaveSnapshot(str(path)))
        wait_for(client, lambda e: isinstance(e, protocol.SnapshotSaved))
    finally:
        client.stop()
    saved = session_data(read_document(path))
    calls = {(e.function, e.key): e.calls for e in saved.compile_ledger}
    # every graph of the first engine goes on: never fewer calls, and more in all
    assert all(calls[(e.function, e.key)] >= e.calls for e in down.compile_ledger)
    assert sum(calls.values()) > sum(e.calls for e in down.compile_ledger)
    # at most what the records imply: one encode per served request
    encode = sum(n for (function, _), n in calls.items() if function == "encode")
    assert encode <= len([r for r in saved.records if r.ok])
    assert set(saved.energy) == {"c1"}
