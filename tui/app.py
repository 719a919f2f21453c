"""The infertop dashboard: one immutable LiveView in an app-level reactive, panels bound to
it, keys that send commands to an engine running in another process.

The event loop never waits on the engine: a worker thread opens and polls the engine link
(tui/engine_reader.py; the link is the seam, probe/contract/engine_link.py, whatever its
transport), and posts what it hears as one message. The app puts
its parts together: its state (tui/dashboard_state.py), what its keys do (tui/key_actions.py
and the live A/B's tui/ab_actions.py, bound in tui/keys.py), what the engine's messages do
(tui/engine_events.py) and its layout (tui/dashboard_layout.py).
"""

from __future__ import annotations

from textual import work
from textual.app import ComposeResult
from textual.worker import get_current_worker

from tui import terminal_watch
from tui.ab_actions import ABActions
from tui.dashboard_layout import dashboard_widgets
from tui.engine_events import EngineEvents
from tui.engine_reader import EngineReader
from tui.keys import KEYS


class InfertopApp(EngineEvents, ABActions):
    CSS_PATH = "dashboard.tcss"
    TITLE = "infertop"
    ENABLE_COMMAND_PALETTE = False
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (34, "-tall")]
    BINDINGS = [*KEYS]

    def compose(self) -> ComposeResult:
        yield from dashboard_widgets(self._clock)

    def on_mount(self) -> None:
        self._show_switch()
        facts = self.facts()
        if facts is not None:
            if facts.journal_problem:
                self.say(f"{facts.journal_problem}. Should the engine crash, what it "
                         f"served cannot be saved: press s while it runs to keep it.",
                         severity="warning", timeout=20)
            self._read_engine()
        self.terminal_watched = terminal_watch.has_controlling_terminal()
        if self.terminal_watched:
            self.set_interval(terminal_watch.WATCH_INTERVAL_S, self._check_terminal,
                              name="terminal watch")

    async def _check_terminal(self) -> None:
        if not terminal_watch.has_controlling_terminal():
            await self.action_quit()

    def on_unmount(self) -> None:
        self._stopping.set()

    @work(thread=True, exclusive=True, name="engine reader", group="engine", exit_on_error=False)
    def _read_engine(self) -> None:
        link, worker = self.link, get_current_worker()
        assert link is not None
        try:
            EngineReader(link, self.post_message, self._stopping).run(worker)
        finally:
            self.reader_stopped.set()
