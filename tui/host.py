"""What the dashboard's parts (the engine side, the warm switch, the live A/B, the option
changes, the engine's events) may touch of the app (tui/app.py): the reactives its widgets
bind to, who steers, a notification, the switch line redrawn, and Textual's timer, worker and
message post. A test passes any object with these (no Textual app needed)."""

from __future__ import annotations

from typing import Any, Callable, Protocol

from textual.message import Message
from textual.notifications import SeverityLevel
from textual.timer import Timer

from probe.contract.live import LiveView
from probe.contract.options import OptConfig


class Host(Protocol):
    view: LiveView | None
    requested: OptConfig
    options_sent_s: float | None    # session time `requested` was sent; inf while staged
    speed: float | None             # None until the engine picked the rate
    paused: bool
    engine_state: str
    engine_note: str
    switch_kind: str                # "cold" or "warm"
    steering: bool                  # False: another dashboard steers this server
    role_text: str                  # the server's word on who steers

    def say(self, message: str, *, severity: SeverityLevel = "information",
            timeout: float | None = None) -> None: ...

    def show_switch(self) -> None: ...

    def set_timer(self, delay: float, callback: Callable[[], Any], *, name: str) -> Timer: ...

    def run_worker(self, work: Callable[[], Any], *, group: str, exclusive: bool,
                   thread: bool, exit_on_error: bool) -> Any: ...

    def post_message(self, message: Message) -> bool: ...

    def refresh_bindings(self) -> None: ...
