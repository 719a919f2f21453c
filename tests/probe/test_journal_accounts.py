"""A session's running accounts — each config's energy (its idle floor) and the compile
ledger — are journaled: the session read back from its journal (a dashboard restart,
`snapshot recover`, a save while the engine is down) saves the same `compile_ledger` and the
same segment energy as the live session would, across engine restarts too; a torn or garbled
line costs that line only; and a change is written at most once a second, the last one by a
timer or at the writer's close."""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from probe.contract.figures import ConfigEnergy
from probe.contract.options import OptConfig
from probe.contract.records import EnergyPhases, LedgerEntry
from probe.session_store.journal import JournaledSession, JournalWriter
from probe.session_store.journal_reader import read_journal
from probe.session_store.recover import recover
from probe.session_store.snapshot import read_document, saved_session, snapshot_document
from tests.conftest import synthetic_record
from tests.probe.test_reader_fuzz import _mutated

CONTEXT = {"environment": {"device": "cpu"}, "model": {"name": "t5-tiny", "dtype": "fp32"},
           "trace": {"name": "chat"}, "settings": {}, "live": {}}
CONFIGS = (OptConfig(), OptConfig(compile="default"))     # c1 eager, c2 its compiled twin
SOURCE = "RAPL package-0"


def new_journal(folder: Path) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "session.jsonl"
    os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    return str(path)


def document(data) -> dict:
    return snapshot_document(data, environment={}, model={}, trace={})


seconds = st.floats(0.0, 1e4, allow_nan=False)
energy_op = st.tuples(st.just("energy"), st.sampled_from(["c1", "c2"]),
                      st.builds(ConfigEnergy, source=st.just(SOURCE), idle_j=seconds,
                                idle_s=seconds, busy_s=seconds))


@st.composite
def entries(draw) -> tuple[LedgerEntry, ...]:
    out = []
    for graph in draw(st.lists(st.tuples(st.sampled_from(["c1", "c2"]),
                                         st.sampled_from(["encode", "decode_step"]),
                                         st.sampled_from(["(1, 8) int64", "(1, 16) int64"])),
                               unique=True, max_size=4)):
        calls = draw(st.integers(0, 50))
        median_of = draw(st.integers(0, calls))
        out.append(LedgerEntry(*graph, calls=calls, runtime_ms_total=draw(seconds),
                               runtime_ms_median=draw(seconds) if median_of else None,
                               compile_s=draw(seconds) if graph[0] == "c2" else 0.0,
                               stalled_requests=tuple(draw(st.lists(
                                   st.sampled_from(["r0", "r1", "r2"]), unique=True))),
                               paid_back=draw(st.sampled_from([True, False, None])),
                               median_of=median_of))
    return tuple(out)


ops = st.lists(st.one_of(energy_op, st.tuples(st.just("ledger"), entries()),
                         st.tuples(st.just("record"), st.sampled_from(["c1", "c2"]))),
               max_size=12)


def serve(session: JournaledSession, steps, first_seq: int = 0) -> None:
    """What an engine does to its session: configs, records, energy, ledger, in any order."""
    for options in CONFIGS:
        session.config_id(options)
    seq = first_seq
    for step in steps:
        if step[0] == "energy":
            session.set_energy(step[1], step[2])
        elif step[0] == "ledger":
            session.set_compile_ledger(step[1])
        else:
            session.add_record(synthetic_record(f"r{seq}", seq, latency_ms=50.0,
                                                config_id=step[1]))
            seq += 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=ops, second=ops, every_s=st.sampled_from([0.0, 1e9]))
def test_the_journal_reads_back_what_the_live_session_would_save(tmp_path_factory, first,
                                                                 second, every_s):
    """For any sequence, and again after a restart that continues it: written at every change
    (every_s 0) or held back until the writer closes (every_s 1e9), the same document."""
    path = new_journal(tmp_path_factory.mktemp("j"))
    writer = JournalWriter(path)
    live = JournaledSession(writer, accounts_every_s=every_s)
    writer.header(time.time(), CONTEXT)
    serve(live, first)
    writer.close()
    journal = read_journal(path)
    assert journal is not None and not journal.unreadable
    assert document(journal.data) == document(live.freeze())

    writer = JournalWriter(path)                # the engine restarted: it goes on from there
    restarted = JournaledSession(writer, journal.data, accounts_every_s=every_s)
    serve(restarted, second, first_seq=100)
    writer.close()
    journal = read_journal(path)
    assert journal is not None and not journal.unreadable
    assert document(journal.data) == document(restarted.freeze())


def test_a_restarted_engine_adds_to_the_idle_floor_and_the_ledger_it_continues(tmp_path):
    path = new_journal(tmp_path)
    writer = JournalWriter(path)
    earlier = JournaledSession(writer, accounts_every_s=0.0)
    writer.header(time.time(), CONTEXT)
    serve(earlier, [])
    earlier.set_energy("c2", ConfigEnergy(SOURCE, idle_j=2.0, idle_s=4.0, busy_s=1.0))
    earlier.set_compile_ledger((
        LedgerEntry("c1", "decode_step", "k", 10, 100.0, 10.0, 0.0, median_of=10),
        LedgerEntry("c2", "decode_step", "k", 4, 8.0, 2.0, 30.0, ("r0",), median_of=4)))
    writer.close()
    journal = read_journal(path)
    assert journal is not None

    writer = JournalWriter(path)
    now = JournaledSession(writer, journal.data, accounts_every_s=0.0)
    # the new engine's own counts start from zero
    now.set_energy("c2", ConfigEnergy(SOURCE, idle_j=3.0, idle_s=1.0, busy_s=2.0))
    now.set_compile_ledger((LedgerEntry("c2", "decode_step", "k", 20, 40.0, 2.0, 1.0, ("r5",),
                                        median_of=20),))
    writer.close()
    journal = read_journal(path)
    assert journal is not None
    assert journal.data.energy["c2"] == ConfigEnergy(SOURCE, idle_j=5.0, idle_s=5.0, busy_s=3.0)
    by_graph = {(e.config_id, e.key): e for e in journal.data.compile_ledger}
    c2 = by_graph[("c2", "k")]
    assert (c2.calls, c2.runtime_ms_total, c2.compile_s) == (24, 48.0, 31.0)
    assert c2.stalled_requests == ("r0", "r5") and c2.median_of == 20
    # judged again across the engines: 24 calls × (10 − 2) ms = 0.192 s < 31 s compiling
    assert c2.paid_back is False
    assert by_graph[("c1", "k")].calls == 10        # the earlier engine's, kept


def test_recover_writes_the_ledger_and_the_idle_floor(tmp_path):
    """`snapshot recover` of a killed run: its segments' energy is the live session's."""
    path = new_journal(tmp_path / "state")
    writer = JournalWriter(path)
    live = JournaledSession(writer, accounts_every_s=0.0)
    writer.header(time.time() - 60.0, CONTEXT)
    serve(live, [("record", "c1")] * 3)
    live.set_energy("c1", ConfigEnergy(SOURCE, idle_j=1.5, idle_s=3.0, busy_s=0.5))
    live.set_compile_ledger((LedgerEntry("c1", "encode", "(1, 8) int64", 3, 6.0, 2.0, 0.0,
                                         median_of=3),))
    for record in live.freeze().records:   # the requests keep their joules (journaled as ever)
        assert record.energy_j is None
    os.close(os.open(path, os.O_RDONLY))   # killed: no close, nothing flushed at the end
    out = tmp_path / "out.json"
    assert recover(path, str(out)).startswith("wrote ")
    saved = read_document(out)
    expected = document(live.freeze())
    assert saved["compile_ledger"] == expected["compile_ledger"]
    assert saved["energy"] == expected["energy"]
    (segment,) = [s for s in saved["segments"] if s["config_id"] == "c1"]
    (live_segment,) = [s for s in expected["segments"] if s["config_id"] == "c1"]
    assert segment["energy"]["idle_joules"] == live_segment["energy"]["idle_joules"] == 1.5


def test_a_torn_or_garbled_line_costs_that_line_only(tmp_path):
    path = new_journal(tmp_path)
    writer = JournalWriter(path)
    live = JournaledSession(writer, accounts_every_s=0.0)
    writer.header(time.time(), CONTEXT)
    serve(live, [("record", "c1")])
    live.set_energy("c1", ConfigEnergy(SOURCE, idle_j=1.0, idle_s=1.0))
    live.set_compile_ledger((LedgerEntry("c1", "encode", "a", 1, 1.0, 1.0, 0.0, median_of=1),))
    live.set_energy("c1", ConfigEnergy(SOURCE, idle_j=2.0, idle_s=2.0))
    live.set_compile_ledger((LedgerEntry("c1", "encode", "a", 2, 2.0, 1.0, 0.0, median_of=2),
                             LedgerEntry("c1", "encode", "b", 1, 1.0, 1.0, 0.0, median_of=1)))
    writer.close()
    lines = Path(path).read_bytes().splitlines(keepends=True)
    kinds = [json.loads(line)["kind"] for line in lines]
    last_energy = max(i for i, k in enumerate(kinds) if k == "energy")
    last_ledger = max(i for i, k in enumerate(kinds) if k == "compile_ledger")
    lines[last_energy] = lines[last_energy].replace(b'"idle_j":2.0', b'"idle_j":"two"')
    lines[last_ledger] = lines[last_ledger][:40] + b"\n"       # torn by a kill
    Path(path).write_bytes(b"".join(lines))
    journal = read_journal(path)
    assert journal is not None
    assert sorted(n for n, _ in journal.unreadable) == sorted([last_energy + 1, last_ledger + 1])
    assert journal.data.energy["c1"].idle_j == 1.0          # the line before it, kept
    assert [(e.key, e.calls) for e in journal.data.compile_ledger] == [("a", 1)]
    assert len(journal.data.records) == 1


def test_changes_are_written_at_most_once_a_second_the_last_by_a_timer(tmp_path):
    path = new_journal(tmp_path)
    writer = JournalWriter(path)
    live = JournaledSession(writer, accounts_every_s=0.2)
    live.config_id(OptConfig())
    for joules in range(1, 6):
        live.set_energy("c1", ConfigEnergy(SOURCE, idle_j=float(joules), idle_s=1.0))

    def written() -> list[float]:
        return [json.loads(line)["value"]["idle_j"] for line in Path(path).read_text().splitlines()
                if json.loads(line)["kind"] == "energy"]

    assert written() == [1.0]                   # the first at once, the rest held back
    deadline = time.monotonic() + 10.0
    while written() != [1.0, 5.0] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert written() == [1.0, 5.0]              # the last, by the timer, once
    writer.close()
    assert written() == [1.0, 5.0]              # nothing changed since: nothing more


def test_request_joules_come_back_beside_the_idle_floor(tmp_path):
    path = new_journal(tmp_path)
    writer = JournalWriter(path)
    live = JournaledSession(writer)
    writer.header(time.time(), CONTEXT)
    live.config_id(OptConfig())
    record = synthetic_record("r0", 0, latency_ms=50.0)
    live.add_record(replace(record, energy_j=0.8, energy_phases_j=EnergyPhases(0.2, 0.6)))
    live.set_energy("c1", ConfigEnergy(SOURCE, idle_j=0.4, idle_s=2.0, busy_s=0.05))
    writer.close()
    journal = read_journal(path)
    assert journal is not None
    (segment,) = document(journal.data)["segments"]
    assert segment["energy"]["joules"] == 0.8 + 0.4 and segment["energy"]["idle_joules"] == 0.4


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_damaged_account_lines_never_cost_the_rest(tmp_path_factory, data):
    """Torn, garbage or mutated `energy` / `compile_ledger` lines: `snapshot recover` writes
    a file every reader takes, the records all come back, and a config's or graph's last
    line, where it was left whole, is what the recovered session holds."""
    path = new_journal(tmp_path_factory.mktemp("j"))
    writer = JournalWriter(path)
    live = JournaledSession(writer, accounts_every_s=0.0)
    writer.header(time.time() - 60.0, CONTEXT)
    serve(live, [("record", "c1"), ("record", "c2")])
    for step in range(3):
        live.set_energy("c1", ConfigEnergy(SOURCE, idle_j=1.0 + step, idle_s=1.0))
        live.set_compile_ledger((LedgerEntry("c2", "encode", "a", step + 1, 2.0 * (step + 1),
                                             2.0, 0.5, median_of=step + 1),))
    writer.close()
    lines = Path(path).read_text().splitlines()
    kinds = {i: json.loads(line)["kind"] for i, line in enumerate(lines)
             if json.loads(line)["kind"] in ("energy", "compile_ledger")}
    damaged = data.draw(st.sets(st.sampled_from(sorted(kinds)), min_size=1, max_size=3))
    for index in damaged:
        how = data.draw(st.sampled_from(["mutate", "tear", "garbage"]))
        if how == "mutate":
            lines[index] = json.dumps(_mutated(json.loads(lines[index]), data))
        elif how == "tear":
            lines[index] = lines[index][:data.draw(st.integers(0, len(lines[index]) - 1))]
        else:
            lines[index] = data.draw(st.text(max_size=20)).replace("\n", " ")
    Path(path).write_text("\n".join(lines) + "\n")
    out = tmp_path_factory.mktemp("o") / "out.json"
    assert "wrote " in recover(path, str(out))
    saved = saved_session(read_document(out))
    assert [r.id for r in saved.records] == [r.id for r in live.freeze().records]
    expected = live.freeze()
    if max(i for i, k in kinds.items() if k == "energy") not in damaged:
        assert saved.energy["c1"] == expected.energy["c1"]
    if max(i for i, k in kinds.items() if k == "compile_ledger") not in damaged:
        # a mutated earlier line may name another graph: this one's last entry is kept
        assert [e for e in saved.compile_ledger if (e.config_id, e.key) == ("c2", "a")] \
            == list(expected.compile_ledger)


def test_a_call_that_found_nothing_new_does_not_hold_the_first_change_back(tmp_path):
    path = new_journal(tmp_path)
    writer = JournalWriter(path)
    live = JournaledSession(writer, accounts_every_s=60.0)
    live.config_id(OptConfig())
    live.set_compile_ledger(())                 # the engine's flush before any graph
    live.set_compile_ledger((LedgerEntry("c1", "encode", "a", 1, 1.0, 1.0, 0.0, median_of=1),))
    assert '"kind":"compile_ledger"' in Path(path).read_text()      # at once, not in 60 s
    writer.close()
