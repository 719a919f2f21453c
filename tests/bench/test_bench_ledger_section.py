"""bench's report: each run's compile ledger, read back from the snapshot the run saved, is
that session's own ledger, and report.md shows it as the rows `snapshot show` prints."""

from __future__ import annotations

import json
from dataclasses import asdict, replace

from probe.bench.ledger_section import ROWS_SHOWN, ledger_by_run, ledger_markdown
from probe.bench.report import render_markdown
from probe.contract.options import OptConfig
from probe.contract.records import LedgerEntry
from probe.session_store.ledger_table import LEDGER_COLUMNS, ledger_rows
from probe.session_store.snapshot import read_document, saved_session, snapshot_document
from probe.session_store.tables import table
from tests.bench.conftest import record

EAGER, COMPILED = OptConfig(), OptConfig(compile="default")


def ledger(count: int) -> tuple[LedgerEntry, ...]:
    entries = []
    for i in range(count):
        entries.append(LedgerEntry("c2", "decode_step", f"(1, {i + 1}) int64", 10 + i,
                                   20.0 + i, 2.0, 1.5 * (i % 4), (f"r{i}",) if i % 4 else (),
                                   paid_back=None if i % 3 else bool(i % 2), median_of=10 + i))
    entries.append(LedgerEntry("c1", "decode_step", "(1, 1) int64", 40, 200.0, 5.0, 0.0))
    return tuple(entries)


def write_session(tmp_path, make_session, entries, name="E1-x.json"):
    data = make_session([record("r0", 0, latency_ms=50.0)],
                        options={"c1": EAGER, "c2": COMPILED})
    data = replace(data, compile_ledger=entries)
    (tmp_path / "runs").mkdir(exist_ok=True)
    path = tmp_path / "runs" / name
    path.write_text(json.dumps(snapshot_document(data, environment={}, model={}, trace={})))
    return path


def test_each_snapshots_ledger_is_the_sessions_own(tmp_path, make_session):
    path = write_session(tmp_path, make_session, ledger(3))
    runs = {"E1-eager": {"snapshot": "runs/E1-x.json"},
            "E1-default": {"snapshot": "runs/E1-x.json"},     # served together: one snapshot
            "E1-failed": {"error": "boom"}, "E6": {"snapshot": "runs/missing.json"}}
    found = ledger_by_run(tmp_path, runs)
    saved = saved_session(read_document(path)).compile_ledger
    assert list(found) == ["runs/E1-x.json"]
    assert found["runs/E1-x.json"]["runs"] == ["E1-eager", "E1-default"]
    assert found["runs/E1-x.json"]["entries"] == json.loads(json.dumps([asdict(e) for e in saved]))
    assert [LedgerEntry(**{**e, "stalled_requests": tuple(e["stalled_requests"])})
            for e in found["runs/E1-x.json"]["entries"]] == list(ledger(3))
    lines = ledger_markdown({"compile_ledger": found})
    assert lines[0] == "## The compile ledger, run by run"
    shown = table(LEDGER_COLUMNS, ledger_rows(saved)).splitlines()[2:]   # snapshot show's rows
    assert sorted(line for line in "\n".join(lines).splitlines()
                  if line[:4] in ("| c1", "| c2")) == sorted(shown)


def test_many_graphs_show_the_costliest_compiles_with_shares_over_all(tmp_path, make_session):
    entries = ledger(ROWS_SHOWN + 5)
    write_session(tmp_path, make_session, entries)
    report = {"compile_ledger": ledger_by_run(tmp_path, {"E1": {"snapshot": "runs/E1-x.json"}})}
    lines = ledger_markdown(report)
    rows = [line for line in "\n".join(lines).splitlines() if line[:4] in ("| c1", "| c2")]
    assert len(rows) == ROWS_SHOWN
    all_rows = table(LEDGER_COLUMNS, ledger_rows(entries)).splitlines()[2:]
    costliest = sorted(range(len(entries)),
                       key=lambda i: (-entries[i].compile_s, -entries[i].runtime_ms_total))
    # the costliest compiles first, each row as it reads with shares over every graph
    assert rows == [all_rows[i] for i in costliest[:ROWS_SHOWN]]
    assert any("the 6 cheaper ones: `infertop snapshot show runs/E1-x.json`" in line
               for line in lines)
    assert "## The compile ledger, run by run" in render_markdown(report)


def test_no_ledger_no_section(tmp_path, make_session):
    write_session(tmp_path, make_session, ())
    assert ledger_by_run(tmp_path, {"E1": {"snapshot": "runs/E1-x.json"}}) == {}
    assert ledger_markdown({}) == [] and ledger_markdown({"compile_ledger": {}}) == []


def test_a_compiled_runs_pay_back_is_judged_against_its_eager_twins_run(tmp_path, make_session):
    """Runs serve one config each: the compiled run's graphs are judged by `paid_back` against
    the same function and key in the eager twin's run, which report.json names."""
    def one_config(name, options, entries):
        data = make_session([record("r0", 0, latency_ms=50.0)], options={"c1": options})
        (tmp_path / "runs").mkdir(exist_ok=True)
        (tmp_path / "runs" / name).write_text(json.dumps(snapshot_document(
            replace(data, compile_ledger=entries), environment={}, model={}, trace={})))

    eager = (LedgerEntry("c1", "decode_step", "k", 100, 200.0, 2.0, 0.0, median_of=100),
             LedgerEntry("c1", "encode", "k", 10, 50.0, 5.0, 0.0, median_of=10))
    compiled = (  # saves 100 × (2 − 1) ms = 0.1 s against 0.05 s compiling: paid back
        LedgerEntry("c1", "decode_step", "k", 100, 100.0, 1.0, 0.05, median_of=100),
        # saves 10 × (5 − 4) ms = 0.01 s against 1 s: not yet
        LedgerEntry("c1", "encode", "k", 10, 40.0, 4.0, 1.0, median_of=10),
        # a key the eager run never served: unknown
        LedgerEntry("c1", "encode", "other", 1, 4.0, 4.0, 1.0, median_of=1))
    one_config("eager.json", EAGER, eager)
    one_config("compiled.json", COMPILED, compiled)
    found = ledger_by_run(tmp_path, {"E1-off": {"snapshot": "runs/eager.json"},
                                     "E1-default": {"snapshot": "runs/compiled.json"}})
    verdicts = [e["paid_back"] for e in found["runs/compiled.json"]["entries"]]
    assert verdicts == [True, False, None]
    assert found["runs/compiled.json"]["judged_against"] == {"c1": "runs/eager.json"}
    assert [e["paid_back"] for e in found["runs/eager.json"]["entries"]] == [None, None]
    text = "\n".join(ledger_markdown({"compile_ledger": found}))
    assert "c1's pay-back against the eager twin's run `runs/eager.json`" in text
    assert "| yes |" in text and "| not yet |" in text
