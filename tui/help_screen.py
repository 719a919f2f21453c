"""`?`: every key, read from the app's BINDINGS so the list cannot drift from what works; and
where the running engine writes its log."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

INTRO = ("infertop replays traffic through the model and shows what each optimization does. "
         "Toggles are sent to the engine once no key has been pressed for a second, so cycling "
         "through values never serves the ones between; they apply from the next request, and "
         "each new config starts cold (its own segment), as a fresh deployment would. The "
         "status bar shows the options served: bucket=off→on is asked for but not served yet; "
         "decode=fullgraph! is what the engine chose instead of what was asked, its reason on "
         "the line below. The plot marks config changes (orange) and compiles (red).")


def key_table(bindings: list[Binding]) -> Table:
    table = Table(box=None, padding=(0, 2), show_header=False)
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    keys_of: dict[str, list[str]] = {}     # two bindings of one action (q, ctrl+q): one row
    first: dict[str, Binding] = {}
    for binding in bindings:
        keys_of.setdefault(binding.action, []).extend(
            _key_name(k) for k in binding.key.split(","))
        first.setdefault(binding.action, binding)
    for action, binding in first.items():
        table.add_row(" / ".join(keys_of[action]), binding.description, binding.tooltip)
    return table


def _key_name(key: str) -> str:
    return {"plus": "+", "minus": "-", "equals_sign": "=", "question_mark": "?"}.get(key, key)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark", "dismiss", "close help")]

    def __init__(self, bindings: list[Binding], log_line: str = "") -> None:
        super().__init__()
        self._keys = bindings
        self._log_line = log_line

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body") as body:
            body.border_title = "infertop keys"
            body.border_subtitle = "esc or ? closes"
            yield Static(Text(INTRO, style="dim"))
            yield Static(Text(self._log_line), id="help-log")   # a path: a Text, never markup
            yield Static(key_table(self._keys), id="help-keys")
