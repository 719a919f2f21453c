"""A session saved from its journal keeps its SLO — `infertop snapshot recover` and the
dashboard's save after an engine crash — so its goodput and attainment come back, equal to a
recomputation from the saved records."""

from __future__ import annotations

import os
import time
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from probe.contract.objective import Slo, parse_slo
from probe.contract.options import OptConfig
from probe.contract.protocol import EngineExit
from probe.session_store.journal import Dispatch, JournaledSession, JournalWriter
from probe.session_store.journal_reader import read_journal, save_from_journal
from probe.session_store.recover import recover
from probe.session_store.snapshot import read_document
from tests.conftest import synthetic_record

CONTEXT = {"environment": {"device": "cpu"}, "model": {"name": "t5-tiny", "dtype": "fp32"},
           "trace": {"name": "chat"}, "settings": {}, "live": {}}


def new_journal(folder: Path) -> str:
    """An empty journal file, as the dashboard creates one (0o600, never an existing one)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "session.jsonl"
    os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    return str(path)


def journal_with(path: str, slo: Slo | None, latencies: list[float], failed: set[int],
                 never_served: int = 1) -> None:
    """A session as an engine journals it: its SLO, records (some failed), and requests
    dispatched and never served (a kill -9)."""
    writer = JournalWriter(path)
    session = JournaledSession(writer)
    session.config_id(OptConfig())
    session.set_slo(slo)
    writer.header(time.time() - 600.0, CONTEXT)
    for seq, latency in enumerate(latencies):
        writer.dispatch(Dispatch(seq, f"r{seq}", 10, float(seq)))
        session.add_record(synthetic_record(f"r{seq}", seq, latency_ms=latency,
                                            error="RuntimeError: boom" if seq in failed
                                            else None))
    for extra in range(never_served):
        seq = len(latencies) + extra
        writer.dispatch(Dispatch(seq, f"r{seq}", 10, float(seq)))
    writer.close()


def recomputed(document: dict, bound_ms: float) -> tuple[float, float]:
    """Attainment and goodput (req/s) by the definitions, from the saved records alone: good =
    served within the latency bound; goodput over first start to last end of every record."""
    records = document["requests"]
    good = [r for r in records if not r["error"] and r["latency_ms"] <= bound_ms]
    span = max(r["end_s"] for r in records) - min(r["start_s"] for r in records)
    return len(good) / len(records), len(good) / span


@given(latencies=st.lists(st.floats(10.0, 5000.0), min_size=1, max_size=12),
       failed=st.sets(st.integers(0, 11), max_size=4), bound=st.floats(50.0, 4000.0),
       never_served=st.integers(0, 3))
def test_recover_keeps_the_slo_and_its_figures_match_the_records(tmp_path_factory, latencies,
                                                                 failed, bound, never_served):
    folder = tmp_path_factory.mktemp("recover")
    path = new_journal(folder / "state")
    slo = Slo(latency_ms=bound)
    journal_with(path, slo, latencies, failed, never_served)
    line = recover(path, str(folder / "out.json"))
    assert line.startswith("wrote ")
    document = read_document(folder / "out.json")
    assert document["slo"] == slo.as_dict()
    (segment,) = document["segments"]
    attainment, goodput = recomputed(document, bound)
    assert len(document["requests"]) == len(latencies) + never_served   # lost ones: failed
    assert abs(segment["slo_attainment"] - attainment) < 1e-9
    assert abs(segment["goodput_rps"] - goodput) < 1e-9 * max(goodput, 1.0)


def test_the_dashboards_crash_save_keeps_the_slo(tmp_path):
    path = new_journal(tmp_path / "state")
    slo = parse_slo("ttft=1s,latency=800ms")
    journal_with(path, slo, [100.0, 900.0, 300.0], failed={2})
    out = save_from_journal(path, tmp_path / "down.json", EngineExit(time.time(), -9, "killed"))
    document = read_document(out)
    assert document["slo"] == slo.as_dict()
    (segment,) = document["segments"]
    # r0 good; r1 over the latency bound; r2 failed; r3 dispatched, never served: 1 of 4
    assert segment["slo_attainment"] == 0.25
    assert segment["goodput_rps"] is not None and segment["goodput_rps"] > 0


def test_the_last_slo_set_is_the_one_read_back_and_none_reads_as_none(tmp_path):
    path = new_journal(tmp_path / "a")
    journal_with(path, None, [100.0], failed=set())
    journal = read_journal(path)
    assert journal is not None and journal.data.slo is None
    path = new_journal(tmp_path / "b")
    writer = JournalWriter(path)
    session = JournaledSession(writer)
    session.set_slo(parse_slo("latency=1s"))
    session.set_slo(parse_slo("ttft=200ms"))
    writer.header(time.time(), CONTEXT)
    writer.close()
    journal = read_journal(path)
    assert journal is not None and journal.data.slo == parse_slo("ttft=200ms")
    # a restarted engine's session goes on with it
    restored = JournaledSession(JournalWriter(path), journal.data)
    assert restored.freeze().slo == parse_slo("ttft=200ms")
