"""The compile ledger as a table: one row a graph, the same rows wherever it is shown
(`snapshot show`, the `e` screen, the bench report), so a figure reads the same in each."""

from __future__ import annotations

from typing import Sequence

from probe.analysis.compile_ledger import step_shares
from probe.common.units import NO_DATA, fmt_fraction, fmt_ms, fmt_s
from probe.contract.records import LedgerEntry
from probe.session_store.tables import text_table

LEDGER_COLUMNS = ("config", "function", "key (tensor shapes, dtypes)", "calls", "run total",
                  "median", "share", "compile", "stalled", "paid back")
LEDGER_NOTE = ("share: of the config's time inside its timed calls; paid back: calls × "
               "(eager − compiled per call) ≥ compile, against the same graph in the eager "
               "twin's segment (— where the session has none); docs/figures-and-definitions.md")
PAID_BACK = {True: "yes", False: "not yet", None: NO_DATA}


def stalled_text(ids: Sequence[str]) -> str:
    return NO_DATA if not ids else ", ".join(ids[:3]) + (f" +{len(ids) - 3}" if len(ids) > 3 else "")


def ledger_rows(entries: Sequence[LedgerEntry]) -> list[list[object]]:
    """Each graph's calls, run time, share of its config's timed step time, compile
    seconds, the requests that waited on its compile, and pay-back (LEDGER_COLUMNS)."""
    shares = step_shares(entries)
    rows: list[list[object]] = []
    for e in entries:
        median = fmt_ms(e.runtime_ms_median)
        if e.median_of < e.calls:
            median += f" (of {e.median_of})"
        rows.append([e.config_id, e.function, e.key, e.calls, fmt_ms(e.runtime_ms_total), median,
                     fmt_fraction(shares[(e.config_id, e.function, e.key)]),
                     fmt_s(e.compile_s) if e.compile_s else NO_DATA,
                     stalled_text(e.stalled_requests), PAID_BACK[e.paid_back]])
    return rows


def ledger_text(entries: Sequence[LedgerEntry]) -> str:
    """The aligned plain-text table and its note; "" for a session with no ledger."""
    if not entries:
        return ""
    return text_table(LEDGER_COLUMNS, ledger_rows(entries)) + "\n  " + LEDGER_NOTE
