"""A saved session and a session journal to break, for the tests of what reads them back:
recovery, the range checks, the output lock (tests/probe/test_recover.py,
test_snapshot_ranges.py, test_output_lock.py)."""

from __future__ import annotations

import json
from pathlib import Path

from probe.contract.options import OptConfig
from probe.contract.records import RequestRecord
from probe.engine.state_files import new_journal
from probe.session_store.journal import Dispatch, JournaledSession, JournalWriter

CONTEXT = {"environment": {"device": "cpu"}, "model": {"name": "t5-tiny", "dtype": "fp32"},
           "trace": {"name": "chat"}, "settings": {}, "live": {}}


def record(seq: int, **changed) -> RequestRecord:
    values = dict(
        id=f"r{seq}", seq=seq, config_id="c1", input_tokens=10, padded_tokens=64,
        output_tokens=4, arrival_s=seq * 1.0, start_s=seq + 0.1, first_token_s=seq + 0.2,
        end_s=seq + 0.5, queue_ms=100.0, compile_stall_ms=0.0, encoder_ms=10.0,
        decoder_ms=20.0, ttft_ms=200.0, tpot_ms=5.0, latency_ms=500.0, kv_cache_bytes=4096,
        kv_cache_used_bytes=1024, kv_self_attention_bytes=512, kv_cross_attention_bytes=512)
    values.update(changed)
    return RequestRecord(**values)


def journal_of(tmp_path: Path, served: int = 3) -> str:
    path = new_journal(tmp_path / "state")
    writer = JournalWriter(path)
    session = JournaledSession(writer)
    session.config_id(OptConfig())
    writer.header(1000.0, CONTEXT)
    for seq in range(served):
        writer.dispatch(Dispatch(seq, f"r{seq}", 10, seq * 1.0))
        session.add_record(record(seq))
    writer.close()
    return path


def append(path: str, *lines: str) -> None:
    with open(path, "a") as handle:
        for line in lines:
            handle.write(line + "\n")


def one_error_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line]
    assert len(lines) == 1 and lines[0].startswith("infertop: error: "), text
    assert "Traceback" not in text
    return lines[0]


def saved(tmp_path: Path, name: str = "s.json", **changed) -> Path:
    """A saved session whose second record has `changed` written into its JSON as is."""
    from types import MappingProxyType

    from probe.contract.session import ConfigEntry, SessionData
    from probe.session_store.snapshot import snapshot_document
    data = SessionData(records=(record(0), record(1)),
                       configs=MappingProxyType({"c1": ConfigEntry("c1", OptConfig(), ())}))
    document = snapshot_document(data, environment={"device": "cpu"},
                                 model={"name": "t5-tiny"}, trace={"name": "chat"})
    document["requests"][1].update(changed)
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return path
