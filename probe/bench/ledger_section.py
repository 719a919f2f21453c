"""bench's report: the compile ledger of each run's saved session — what each compiled graph
cost, earned and stalled (probe/analysis/compile_ledger.py) — read back from the snapshot the
run wrote, and shown as the rows `snapshot show` prints (probe/session_store/ledger_table.py).

Each run serves one config on a fresh engine, so a compiled run's session rarely holds its eager
twin and cannot judge pay-back itself; the study can: the eager twin's run served the same
requests, so a graph the session left unjudged is judged (`paid_back`, the one definition)
against the same function and key in that run's ledger, and report.json names the run."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from probe.analysis.break_even_live import eager_twin
from probe.analysis.compile_ledger import paid_back
from probe.common.errors import BadInput
from probe.contract.options import OptConfig
from probe.contract.records import LedgerEntry
from probe.contract.session import SessionData
from probe.session_store.ledger_table import LEDGER_COLUMNS, LEDGER_NOTE, ledger_rows
from probe.session_store.snapshot import checked_item, ledger_dict, saved_session
from probe.session_store.tables import table

# Rows a snapshot shows in report.md: its costliest compiles first; report.json keeps all.
ROWS_SHOWN = 12

Twins = dict[OptConfig, tuple[str, dict[tuple[str, str], LedgerEntry]]]


def ledger_by_run(out: Path, runs: dict) -> dict[str, dict]:
    """report.json `compile_ledger`: each run's snapshot (runs served together share one) →
    {"runs": [keys], "entries": [its ledger, as the session JSON holds it, pay-back judged
    against the eager twin's run where the session could not], "judged_against": {config id:
    the twin run's snapshot}}; a snapshot that cannot be read back, or has no ledger, is left
    out."""
    sessions: dict[str, SessionData] = {}
    keys: dict[str, list[str]] = {}
    for key, run in runs.items():
        snapshot = run.get("snapshot") if isinstance(run, dict) else None
        if not isinstance(snapshot, str):
            continue
        if snapshot not in keys:
            data = _session(out / snapshot)
            if data is None or not data.compile_ledger:
                continue
            sessions[snapshot], keys[snapshot] = data, []
        keys[snapshot].append(key)
    twins = _by_options(sessions)
    found: dict[str, dict] = {}
    for snapshot, data in sessions.items():
        judged_against: dict[str, str] = {}
        entries = []
        for entry in data.compile_ledger:
            judged, against = _judged(entry, data, twins)
            entries.append(ledger_dict(judged))
            if against is not None:
                judged_against[entry.config_id] = against
        found[snapshot] = {"runs": keys[snapshot], "entries": entries,
                           "judged_against": judged_against}
    return found


def _session(path: Path) -> SessionData | None:
    try:
        return saved_session(json.loads(path.read_text()), f"snapshot {path}")
    except (OSError, ValueError, BadInput, AttributeError):
        return None


def _by_options(sessions: dict[str, SessionData]) -> Twins:
    """Each eager config's ledger by its options, from the first snapshot that served it."""
    twins: Twins = {}
    for snapshot, data in sessions.items():
        for config_id, config in data.configs.items():
            if config.options.compiled or config.options in twins:
                continue
            twins[config.options] = (snapshot, {(e.function, e.key): e
                                                for e in data.compile_ledger
                                                if e.config_id == config_id})
    return twins


def _judged(entry: LedgerEntry, data: SessionData, twins: Twins
            ) -> tuple[LedgerEntry, str | None]:
    config = data.configs.get(entry.config_id)
    if entry.paid_back is not None or config is None or not config.options.compiled:
        return entry, None
    options = eager_twin(config.options)
    twin = twins.get(options)
    if twin is None or any(c.options == options for c in data.configs.values()):
        return entry, None          # none, or the session's own twin judged it already
    snapshot, eager = twin
    verdict = paid_back(entry, eager.get((entry.function, entry.key)))
    return replace(entry, paid_back=verdict), (snapshot if verdict is not None else None)


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
        against = "".join(f"; {cid}'s pay-back against the eager twin's run `{twin}`"
                          for cid, twin in (found.get("judged_against") or {}).items())
        out += [f"*`{snapshot}`* (runs {runs}): {len(entries)} graph"
                f"{'s' * (len(entries) != 1)}, {compile_s:.3g} s compiling, costliest "
                f"compile first{left}{against}", "", table(LEDGER_COLUMNS, shown), ""]
    if not out:
        return []
    return ["## The compile ledger, run by run", "",
            "Each compiled graph of each run's session: its calls, run time, share of the "
            "config's timed step time, the compile seconds it cost, the requests that waited "
            f"on that compile and whether it paid back. {LEDGER_NOTE}. A run serves one "
            "config, so a compiled run's pay-back is judged against the same graph in its "
            "eager twin's run (the same requests), where the study has one.", ""] + out
