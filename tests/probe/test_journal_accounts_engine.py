"""On a t5-tiny engine (eager, a counter that rises at each reading), journaled as the
dashboard's engine and `replay` journal: the session read back from the journal has the live
session's compile ledger and idle floor; after a restart that continues it, the ledger's calls
are the steps every record implies and the records' joules plus the idle floor are the rise of
both engines' counters."""

from __future__ import annotations

import os
import time
from collections import Counter

from probe.contract.options import parse_opts
from probe.engine.observe.energy_ledger import EnergyLedger
from probe.session_store.journal import JournaledSession, JournalWriter
from probe.session_store.journal_reader import read_journal
from probe.session_store.snapshot import snapshot_document
from tests.conftest import serve
from tests.probe.test_energy_engine import RisingCounter

SHAPES = [(10, 4), (10, 5), (17, 3)]
CONTEXT = {"environment": {}, "model": {}, "trace": {}, "settings": {}, "live": {}}


def journaled(engine, path: str, restored=None) -> JournalWriter:
    """The engine serves into a JournaledSession, its counter the test's."""
    writer = JournalWriter(path)
    engine.energy = EnergyLedger(RisingCounter())
    engine.session, engine.config_id = JournaledSession(writer, restored), ""
    engine.set_options(parse_opts(["decode=fullgraph"]))
    return writer


def accounts(data) -> tuple:
    document = snapshot_document(data, environment={}, model={}, trace={})
    return document["compile_ledger"], document["energy"], document["segments"]


def test_the_journal_keeps_the_ledger_and_idle_floor_across_a_restart(make_engine, tmp_path):
    path = str(tmp_path / "session.jsonl")
    os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    first = make_engine("decode=fullgraph", max_new_tokens=8)
    writer = journaled(first, path)
    writer.header(time.time(), CONTEXT)
    serve(first, SHAPES)
    first.flush_probes()
    writer.close()
    journal = read_journal(path)
    assert journal is not None and not journal.unreadable
    live = first.session.freeze()
    assert live.compile_ledger and live.energy["c1"].idle_j > 0
    assert accounts(journal.data) == accounts(live)

    second = make_engine("decode=fullgraph", max_new_tokens=8)     # the restarted engine
    writer = journaled(second, path, journal.data)
    serve(second, SHAPES, start_seq=len(SHAPES))
    second.flush_probes()
    writer.close()
    journal = read_journal(path)
    assert journal is not None and not journal.unreadable
    data = journal.data
    assert accounts(data) == accounts(second.session.freeze())
    calls: Counter[str] = Counter()
    for entry in data.compile_ledger:
        calls[entry.function] += entry.calls
    assert len(data.records) == 2 * len(SHAPES)
    assert calls["encode"] == calls["prefill_step"] == len(data.records)
    assert calls["decode_step"] == sum(r.output_tokens - 1 for r in data.records)
    # each engine's counter rose 0.25 J a reading: requests' joules + idle = both rises
    idle = data.energy["c1"].idle_j
    assert idle == live.energy["c1"].idle_j + second.energy.config_energy("c1").idle_j
    rises = sum(0.25 * (e.counter.reads - 1) for e in (first.energy, second.energy))
    assert abs(sum(r.energy_j or 0.0 for r in data.records) + idle - rises) < 1e-9
