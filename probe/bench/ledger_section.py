"""bench's report: the compile ledger of each run's saved session — what each compiled graph
cost, earned and stalled (probe/analysis/compile_ledger.py) — read back from the snapshot the
run wrote, and shown as the rows `snapshot show` prints (probe/session_store/ledger_table.py)."""

from __future__ import annotations

import json
from pathlib import Path

from probe.common.errors import BadInput
from probe.contract.records import LedgerEntry
from probe.session_store.ledger_table import LEDGER_COLUMNS, LEDGER_NOTE, ledger_rows
from probe.session_store.snapshot import checked_item, ledger_dict, saved_session
from probe.session_store.tables import table

# Rows a snapshot shows in report.md: its costliest compiles first; report.json keeps all.
ROWS_SHOWN = 12


def ledger_by_run(out: Path, runs: dict) -> dict[str, dict]:
    """report.json `compile_ledger`: each run's snapshot (runs served together share one) →
    {"runs": [keys], "entries": [its ledger, as the session JSON holds it]}; a snapshot that
    cannot be read back, or has no ledger, is left out."""
    found: dict[str, dict] = {}
    for key, run in runs.items():
        snapshot = run.get("snapshot") if isinstance(run, dict) else None
        if not isinstance(snapshot, str):
            continue
        if snapshot in found:
            found[snapshot]["runs"].append(key)
            continue
        entries = _ledger(out / snapshot)
        if entries:
            found[snapshot] = {"runs": [key], "entries": [ledger_dict(e) for e in entries]}
    return found


def _ledger(path: Path) -> tuple[LedgerEntry, ...]:
    try:
        document = json.loads(path.read_text())
        return saved_session(document, f"snapshot {path}").compile_ledger
    except (OSError, ValueError, BadInput, AttributeError):
        return ()


def ledger_markdown(report: dict) -> list[str]:
    ledgers = report.get("compile_ledger") or {}
    out: list[str] = []
    for snapshot, found in ledgers.items():
        try:
            entries = tuple(checked_item(LedgerEntry, raw, f"compile_ledger[{index}]")
                            for index, raw in enumerate(found.get("entries") or []))
        except BadInput:
            continue
        if not entries:
            continue
        rows = ledger_rows(entries)      # shares over every graph, whichever rows are shown
        order = sorted(range(len(entries)),
                       key=lambda i: (-entries[i].compile_s, -entries[i].runtime_ms_total))
        shown = [rows[i] for i in order[:ROWS_SHOWN]]
        runs = ", ".join(f"`{k}`" for k in found.get("runs") or [])
        compile_s = sum(e.compile_s for e in entries)
        left = (f"; the {len(entries) - ROWS_SHOWN} cheaper ones: `infertop snapshot show "
                f"{snapshot}`" if len(entries) > ROWS_SHOWN else "")
        out += [f"*`{snapshot}`* (runs {runs}): {len(entries)} graph"
                f"{'s' * (len(entries) != 1)}, {compile_s:.3g} s compiling, costliest "
                f"compile first{left}", "", table(LEDGER_COLUMNS, shown), ""]
    if not out:
        return []
    return ["## The compile ledger, run by run", "",
            "Each compiled graph of each run's session: its calls, run time, share of the "
            "config's timed step time, the compile seconds it cost, the requests that waited "
            f"on that compile and whether it paid back. {LEDGER_NOTE}.", ""] + out
