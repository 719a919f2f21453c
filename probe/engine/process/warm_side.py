"""The side engine of a warm switch, in its process: load the new config, compile and prewarm
its shapes while the serving engine goes on, say when it is ready, and wait to be cut over
(then it continues the session from the journal, as a restarted engine does). A live A/B's
arm B serves its share of the arrivals first (ArmStart, probe/engine/process/ab_arm.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from probe.contract import protocol
from probe.contract.protocol import ArmStart, CutOver, EngineExit, WarmProgress, WarmReady
from probe.engine.process.ab_arm import serve_arm
from probe.engine.process.engine_launch import EngineLaunch


def warm_up(engine: Any, conn: Connection, send: Callable[[Any], bool],
            output_length: int, launch: EngineLaunch) -> EngineExit | None:
    """Prewarm `engine` on the trace's shapes, each generating `output_length` tokens (the
    trace's longest: a shorter prewarm leaves the longer caches' shapes to compile on a
    request), report it ready, wait for the cut over. Returns the predecessor to continue
    from, or None when the dashboard shut the side engine down."""
    shapes = len(engine.bucket_edges) or 1
    send(WarmProgress(f"prewarming {shapes} shape{'s' * (shapes != 1)}", shapes))
    started = time.perf_counter()
    warmed = engine.prewarm(output_length)     # compiles: the serving engine keeps serving meanwhile
    send(WarmReady(warmed, time.perf_counter() - started))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return None
        if isinstance(message, CutOver):
            return message.predecessor
        if isinstance(message, ArmStart):
            return serve_arm(engine, launch, conn, send)
        if isinstance(message, protocol.Shutdown):
            return None
