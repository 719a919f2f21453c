"""Arm B of the live A/B, in the side engine's process once it is warm: it serves the arrivals
arm A hands over (relayed by the dashboard's engine handle, each with the time it was due),
into the session's journal beside arm A's records, and publishes its own live view. It ends
when the dashboard adopts it (CutOver: the side engine then continues the session, as a warm
switch's does) or drops it (Shutdown); the requests it holds then are served by whichever
engine serves on, since they were dispatched and have no record."""

from __future__ import annotations

import queue
import threading
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from probe.common.errors import BadInput
from probe.contract import protocol
from probe.contract.protocol import (
    ArmLive,
    ArmRequest,
    ArmStarted,
    CutOver,
    EngineExit,
)
from probe.engine.measure.bandwidth_cache import machine_bandwidth
from probe.engine.process.engine_launch import EngineLaunch
from probe.engine.process.view_publisher import publish_views
from probe.engine.session_swap import carry_side_compiles, serving_config
from probe.session_store.journal import JournaledSession, JournalWriter
from probe.session_store.journal_reader import read_journal
from workloads.replayer import ScheduledRequest, Submit

WAIT_S = 0.05


class RelayedArrivals:
    """Arm B's replayer: its arrivals are arm A's, relayed; it runs until the arm stops."""

    total = None        # as long as the A/B lasts
    paused = False

    def __init__(self, speed: float) -> None:
        self.speed = speed          # arm A's replay speed, for the view
        self._queue: queue.Queue[ScheduledRequest] = queue.Queue()

    def put(self, scheduled: ScheduledRequest) -> None:
        self._queue.put(scheduled)

    def run(self, submit: Submit, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                scheduled = self._queue.get(timeout=WAIT_S)
            except queue.Empty:
                continue
            submit(scheduled)

    def request_done(self) -> None:
        pass


def serve_arm(engine: Any, launch: EngineLaunch, conn: Connection,
              send: Callable[[Any], bool]) -> EngineExit | None:
    """Serve as arm B until adopted (returns the stopped serving engine's exit, to continue
    the session from) or dropped (None)."""
    # heavy: the serving loop imports torch, and the dashboard imports this module's package
    from probe.engine.process.live_reporter import LiveReporter
    from probe.engine.serving import ServingLoop

    journal = read_journal(launch.journal_path)
    if journal is None:     # arm A is live, so its header is written: this is no session
        raise BadInput(f"{launch.journal_path}: the session journal has no session yet")
    side_session, side_clock_start = engine.session, engine.clock.start
    engine.clock.start = journal.clock().start       # the session's clock, as arm A reads it
    writer = JournalWriter(launch.journal_path)
    session = JournaledSession(writer, journal.data, per_visit=True)
    engine.session, engine.config_id = session, ""
    config_id = engine.set_options(engine.options)
    # its prewarm's compiles are B's, beside A (issue 49: every compile charged where it ran)
    carry_side_compiles(engine, side_session, side_clock_start, serving_config(journal.data))
    try:
        engine.bandwidth = machine_bandwidth(engine.device, engine.fp32_step_bytes())
    except Exception:  # no roofline is no reason not to serve
        traceback.print_exc()
    send(ArmStarted(config_id, engine.options, session.config_notes(config_id)))
    arrivals = RelayedArrivals(launch.speed or 1.0)
    loop = ServingLoop(engine, arrivals)
    reporter = LiveReporter(loop, launch.trace_name)
    stop = threading.Event()
    ended: list[EngineExit | None] = []

    def commands() -> None:
        while not stop.is_set():
            try:
                if not conn.poll(0.2):
                    continue
                message = conn.recv()
            except (EOFError, OSError):     # the dashboard went away
                message = protocol.Shutdown()
            if isinstance(message, ArmRequest):
                arrivals.put(ScheduledRequest(message.seq, message.request,
                                              engine.clock.start + message.arrival_s))
            elif isinstance(message, (CutOver, protocol.Shutdown)):
                ended.append(message.predecessor if isinstance(message, CutOver) else None)
                stop.set()

    threads = [threading.Thread(target=commands, name="arm commands", daemon=True),
               threading.Thread(target=publish_views, name="arm publisher", daemon=True,
                                args=(reporter.build, send, ArmLive, stop))]
    for thread in threads:
        thread.start()
    loop.run(stop)
    for thread in threads:
        thread.join(timeout=1.0)
    writer.close()
    return ended[0] if ended else None
