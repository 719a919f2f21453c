"""`?`: every key, read from the app's BINDINGS so the list cannot drift from what works."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

INTRO = ("infertop replays traffic through the model and shows what each optimization does. "
         "A toggle applies from the next request; each new config starts cold (its own "
         "segment), as a fresh deployment would. In the status bar, * marks an option asked "
         "for but not served yet. The plot marks config changes (orange) and compiles (red).")


def key_table(bindings: list[Binding]) -> Table:
    table = Table(box=None, padding=(0, 2), show_header=False)
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for binding in bindings:
        keys = " / ".join(_key_name(k) for k in binding.key.split(","))
        table.add_row(keys, binding.description, binding.tooltip)
    return table


def _key_name(key: str) -> str:
    return {"plus": "+", "minus": "-", "equals_sign": "=", "question_mark": "?"}.get(key, key)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark", "dismiss", "close help")]

    def __init__(self, bindings: list[Binding]) -> None:
        super().__init__()
        self._keys = bindings

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body") as body:
            body.border_title = "infertop keys"
            body.border_subtitle = "esc or ? closes"
            yield Static(Text(INTRO, style="dim"))
            yield Static(key_table(self._keys), id="help-keys")
