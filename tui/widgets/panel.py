"""The shape every panel shares: a bordered box bound to the app's live view.

A panel always shows its one-line `headline`; the wide layout adds `.detail`, the compact
layout (80×24) shows a one-line `.compact-only` summary instead when the panel has one.
Each part has a fixed height (see dashboard.tcss), so an update repaints without a relayout,
and a panel whose `render_key` did not change is not redrawn at all: live views arrive twice a
second and most of them change only a few panels.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from rich.console import RenderableType
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import Static

from probe.contract.live import LiveView

WAITING = "waiting for the engine…"


class Parts(NamedTuple):
    headline: RenderableType
    detail: RenderableType
    compact: RenderableType = ""


class Panel(Vertical):
    TITLE = ""
    view: reactive[LiveView | None] = reactive(None)

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.border_title = self.TITLE
        self._drawn_key: Any = None

    def compose(self) -> ComposeResult:
        yield Static(WAITING, classes="headline", markup=False)
        yield Static("", classes="compact-only", markup=False)
        yield Static("", classes="detail", markup=False)

    def watch_view(self, view: LiveView | None) -> None:
        if view is None:
            return
        key = (self.render_key(view), self.content_size)
        if key == self._drawn_key:
            return
        self._drawn_key = key
        self.draw(view, self.content_size.width or 80)

    def on_resize(self) -> None:
        self.watch_view(self.view)   # some text is cut to the width

    def draw(self, view: LiveView, width: int) -> None:
        parts = self.render_parts(view, width)
        self.query_one(".headline", Static).update(parts.headline, layout=False)
        self.query_one(".compact-only", Static).update(parts.compact, layout=False)
        self.query_one(".detail", Static).update(parts.detail, layout=False)

    def render_key(self, view: LiveView) -> Any:
        """What the panel shows depends on: equal keys mean nothing to redraw."""
        return view

    def render_parts(self, view: LiveView, width: int) -> Parts:
        raise NotImplementedError
