"""Adopting arm B through real engine processes (t5-tiny, eager): after the split both arms
serve, then B continues the session alone, as a warm switch's side engine does after its cut
over. Every arrival is served once: what arm A held when it stopped is carried to B."""

from __future__ import annotations

import argparse

import pytest

from probe.contract import protocol
from probe.contract.options import OptConfig
from probe.engine.process.engine_process import EngineClient, launch_from_args
from probe.session_store.journal_reader import read_journal
from tests.probe.test_warm_switch_engine import wait_for


@pytest.mark.slow
def test_adopting_b_continues_the_session_on_b_with_nothing_lost():
    args = argparse.Namespace(model="t5-tiny", trace="chat", device="cpu", opt=[], speed=4.0,
                              buckets="64,128", requests=None, max_input=128, max_output=8)
    client = EngineClient(launch_from_args(args))
    client.start()
    try:
        wait_for(client, lambda e: isinstance(e, protocol.EngineLive) and e.view.recent)
        client.ab_start(OptConfig(kv_cache="off"))
        wait_for(client, lambda e: isinstance(e, protocol.WarmReady))
        client.ab_split()
        arm = wait_for(client, lambda e: isinstance(e, protocol.ArmLive) and len(
            [r for r in e.view.recent if r.config_id == e.view.config_id]) >= 3).view
        b_id = arm.config_id
        client.ab_adopt()
        after = wait_for(client, lambda e: isinstance(e, protocol.EngineLive) and len(
            [r for r in e.view.recent if r.config_id == b_id]) > 3 + 4).view
        assert after.options == OptConfig(kv_cache="off") and after.config_id == b_id
        assert not client.ab_running()
        journal = read_journal(client.journal_path)
        assert journal is not None
        seqs = [r.seq for r in journal.data.records]
        assert len(seqs) == len(set(seqs))                  # none served twice
        assert {"c1", b_id} <= {r.config_id for r in journal.data.records}
        # every dispatch before the adoption has a record by now, or is being served
        served, dispatched = set(seqs), [d.seq for d in journal.dispatches]
        missing = [s for s in dispatched if s not in served]
        assert len(missing) <= after.replay.queue_depth + after.batch.max_batch, (
            f"dispatched and never served: {missing}")
    finally:
        client.stop()
