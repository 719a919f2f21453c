"""An engine process's live view, published every PUBLISH_INTERVAL_S until `stop`: the serving
engine's (EngineLive) and the live A/B's arm B (ArmLive) alike. A reporting fault skips one
view and never stops serving; a handle that is gone stops the process."""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from typing import Any

from probe.contract.live import LiveView
from probe.contract.protocol import PUBLISH_INTERVAL_S


def publish_views(build: Callable[[], LiveView], send: Callable[[Any], bool],
                  wrap: Callable[[LiveView], Any], stop: threading.Event,
                  before_each: Callable[[], None] | None = None) -> None:
    """`build` a view, `send` it `wrap`ped, each interval; `before_each`: what the process
    checks first (the serving engine: whether its journal stopped)."""
    while not stop.wait(PUBLISH_INTERVAL_S):
        if before_each is not None:
            before_each()
        try:
            view = build()
        except Exception:  # a reporting fault must not stop serving
            traceback.print_exc()
            continue
        if not send(wrap(view)):
            stop.set()
