"""`infertop replay`: serve a trace headless and save the session, with exit statuses a script
can trust — 0 every request served, 1 some failed (the snapshot is still written and the last
line says how many and why), 130 interrupted (what was served is saved first)."""

from __future__ import annotations

import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from probe.contract.records import RequestRecord
from probe.engine.engine import Engine

EXIT_SERVED, EXIT_FAILED, EXIT_INTERRUPTED = 0, 1, 130


@dataclass(frozen=True)
class ReplayOutcome:
    served: int
    failed: int
    first_error: str | None
    interrupted: bool

    @property
    def exit_status(self) -> int:
        if self.interrupted:
            return EXIT_INTERRUPTED
        return EXIT_FAILED if self.failed else EXIT_SERVED

    def summary(self, path: Path) -> str:
        text = f"wrote {path}: {self.served} served"
        if self.failed:
            text += f", {self.failed} failed (first: {self.first_error})"
        if self.interrupted:
            text = f"interrupted; {text} before the interruption"
        return text


def outcome(records: tuple[RequestRecord, ...], interrupted: bool) -> ReplayOutcome:
    failed = [r for r in records if not r.ok]
    return ReplayOutcome(served=len(records) - len(failed), failed=len(failed),
                         first_error=failed[0].error if failed else None,
                         interrupted=interrupted)


class GracefulInterrupt:
    """The first Ctrl-C sets `stop` (the request in progress finishes, then the replay ends and
    the session is saved); a second raises KeyboardInterrupt to stop at once (records already
    made are still saved: a record exists only once its request is done)."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self._previous = None

    def _handle(self, signum, frame) -> None:
        if self.stop.is_set():
            raise KeyboardInterrupt
        self.stop.set()
        print("infertop: interrupted: finishing the request in progress, then saving what "
              "was served (Ctrl-C again to save now)", file=sys.stderr)

    def __enter__(self) -> GracefulInterrupt:
        self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        signal.signal(signal.SIGINT, self._previous)


def progress_line(record: RequestRecord) -> str:
    status = record.error or f"{record.latency_ms:9.1f} ms"
    return (f"{record.id:>16} {record.config_id} in={record.input_tokens:<4} "
            f"out={record.output_tokens:<4} stall={record.compile_stall_ms:8.1f} ms {status}")


def serve_and_save(engine: Engine, loop, out: str | Path, document) -> ReplayOutcome:
    """Run the replay under GracefulInterrupt and always save what was served."""
    from probe.contract.snapshot import write_json_atomic
    from probe.engine.headless import run_replay

    interrupted = False
    with GracefulInterrupt() as interrupt:
        try:
            run_replay(loop, interrupt.stop)
        except KeyboardInterrupt:
            interrupted = True
        interrupted = interrupted or interrupt.stop.is_set()
    path = write_json_atomic(out, document())
    result = outcome(engine.session.freeze().records, interrupted)
    print(result.summary(path))
    return result
