"""`e`: the served config's recompiles grouped by the guard that failed, each with its fix
(probe/analysis/guard_groups.py, the doctor's rows), then every compile event's guard failures
and reasons in full, newest first — the feed cuts them to one line — then the session's whole
compile ledger, the rows `snapshot show` prints (probe/session_store/ledger_table.py)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import ScrollableContainer
from textual.screen import ModalScreen
from textual.widgets import Static

from probe.analysis.guard_groups import GuardGroup
from probe.common.units import fmt_clock_column, fmt_s
from probe.contract.records import CompileEvent, LedgerEntry
from probe.session_store.ledger_table import ledger_text

REASONS_KEY = "e"


def groups_text(groups: tuple[GuardGroup, ...]) -> Text:
    """One row a guard group and its fix: what the doctor reads, before the events behind it."""
    text = Text()
    if not groups:
        return text
    text.append("recompiles by guard (the served config)\n", style="bold")
    for group in groups:
        text.append(f"  {group.text()}\n")
        fix = group.fix.text if group.fix is not None else "no option avoids it here"
        text.append(f"    fix: {fix}\n", style="green" if group.fix is not None else "dim")
    text.append("\n")
    return text


def reasons_text(events: tuple[CompileEvent, ...],
                 groups: tuple[GuardGroup, ...] = ()) -> Text:
    """The groups, then each event with a reason, newest first: its header line, then the
    reason whole (one guard failure a line: dynamo joins them with "; ")."""
    text = groups_text(groups)
    shown = [e for e in reversed(events) if e.reason]
    if not shown:
        text.append("no compile event has a reason yet", style="dim")
        return text
    for event in shown:
        text.append(f"{fmt_clock_column(event.start_s)} {event.kind} {event.compile_id} "
                    f"{event.function} · {event.request_id or 'prewarm'} · "
                    f"{event.config_id or '?'} · took {fmt_s(event.duration_s)}\n",
                    style="bold")
        for part in (event.reason or "").split("; "):
            text.append(f"  {part}\n")          # data, never markup
        text.append("\n")
    return text


def ledger_section(entries: tuple[LedgerEntry, ...]) -> Text:
    """The compile ledger, every graph of every config, as `snapshot show` prints it."""
    # unwrapped: a row is wider than the screen, which scrolls sideways (← →) instead
    text = Text("compile ledger (the session)\n", style="bold", no_wrap=True, overflow="ignore")
    if not entries:
        text.append("no graph has been called yet", style="dim")
        return text
    text.append(ledger_text(entries))       # data, never markup
    return text


class TableScroll(ScrollableContainer):
    """Every column of a wide table reachable by keys: ←→ a column, ctrl+←→ a page, End the
    last column and row, Home the first (a plain container's End and Home move only up and
    down)."""
    BINDINGS = [Binding("ctrl+right", "page_right", "page right", show=False),
                Binding("ctrl+left", "page_left", "page left", show=False)]

    def action_scroll_end(self) -> None:
        self.scroll_to(self.max_scroll_x, self.max_scroll_y, animate=False)

    def action_scroll_home(self) -> None:
        self.scroll_to(0, 0, animate=False)


class ReasonsScreen(ModalScreen[None]):
    """As wide as the terminal (a ledger is ~115 columns: at 200 it fits whole)."""
    BINDINGS = [Binding(f"escape,{REASONS_KEY}", "dismiss", "close")]

    def __init__(self, events: tuple[CompileEvent, ...],
                 groups: tuple[GuardGroup, ...] = (),
                 ledger: tuple[LedgerEntry, ...] = ()) -> None:
        super().__init__()
        self._events = events
        self._groups = groups
        self._ledger = ledger

    def compose(self) -> ComposeResult:
        with TableScroll(id="help-body") as body:
            body.styles.width = "100%"
            body.border_title = "compile reasons in full · compile ledger"
            body.border_subtitle = f"esc or {REASONS_KEY} closes · ↑↓ ←→ scroll · End: last column"
            yield Static(reasons_text(self._events, self._groups), id="reasons-text", markup=False)
            ledger = Static(ledger_section(self._ledger), id="reasons-ledger",
                            markup=False)
            ledger.styles.width = "auto"
            yield ledger
