"""Stand-ins for probe.engine.process.engine_process.engine_main that tests run in a spawned engine process.
At module level, in a folder on sys.path (tests/, through conftest.py), so the child, which
inherits the parent's sys.path, can import them."""

from __future__ import annotations

import os
import time
from multiprocessing.connection import Connection

from probe.contract import protocol
from probe.engine.process.engine_child import receive_workload
from probe.engine.process.engine_process import EngineLaunch


def exits_at_once(launch: EngineLaunch, conn: Connection) -> None:
    """An engine that cannot start: it is gone before it reads anything."""
    os._exit(3)


def never_reads(launch: EngineLaunch, conn: Connection) -> None:
    """An engine stuck before it reads anything (an import that hangs, a wedged driver)."""
    time.sleep(3600)


def reports_workload(launch: EngineLaunch, conn: Connection) -> None:
    """Says what reached it through the spawn arguments and through the pipe, then waits."""
    workload = receive_workload(conn)
    held = "none" if launch.workload is None else "a workload"
    count = -1 if workload is None else len(workload.trace.requests)
    conn.send(protocol.EngineLoading(f"spawn arguments held {held}; the pipe brought {count} requests"))
    while not isinstance(conn.recv(), protocol.Shutdown):
        pass
