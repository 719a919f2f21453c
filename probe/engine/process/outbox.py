"""The dashboard's pipe to an engine process, one direction."""

from __future__ import annotations

import queue
import threading
from multiprocessing.connection import Connection
from typing import Any

_CLOSE = object()


class Outbox:
    """Sends to the engine in order, from a thread of its own: `put` never blocks. A send
    blocks while the engine does not read (a megabyte workload before the child runs, an engine
    stuck in a compile), and the dashboard must not wait on that, nor quit only after it."""

    def __init__(self, conn: Connection) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, args=(conn,), name="engine-outbox",
                                        daemon=True)
        self._thread.start()

    def put(self, message: Any) -> None:
        self._queue.put(message)

    def close(self, timeout: float) -> bool:
        """Stop sending; True once the thread is done with the connection (it may be closed)."""
        self._queue.put(_CLOSE)
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self, conn: Connection) -> None:
        while (message := self._queue.get()) is not _CLOSE:
            try:
                conn.send(message)
            except (OSError, EOFError):   # the engine is gone
                return
