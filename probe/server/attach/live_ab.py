"""The live A/B inside `infertop serve`, on real arrivals: arm B (an engine warmed beside the
serving one, as a warm switch's) joins the served session under a config of its own, marked
as the A/B's arm against the serving config (arm A), and from then on serves every other
arrival (the replay's Splitter, as arm A's `divert`) on a serving loop and a thread of its
own, its requests answered to their clients as arm A's are. Its live view is published as
ArmLive. The end: arrivals all go to arm A again, arm B finishes what it holds (its clients
wait for nothing), then it is adopted (the serving loop cuts over to it at a step boundary:
it goes on serving the session under its config) or dropped. What arm B was handed and did
not record (it failed, or did not finish within END_WAIT_S) is served by arm A: nothing
dispatched is lost."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from probe.contract.engine_link import ABEnded, ABSplit, ArmLive, ArmStarted
from probe.contract.session import ab_arm_note
from probe.engine.process.ab_arm import RelayedArrivals
from probe.engine.process.ab_split import Splitter
from probe.engine.process.view_publisher import publish_views
from probe.engine.session_swap import carry_side_compiles, follow_session
from workloads.replayer import ScheduledRequest

if TYPE_CHECKING:
    from probe.engine.engine import Engine
    from probe.engine.serving import ServingLoop
    from probe.server.engine_host import EngineHost

log = logging.getLogger(__name__)   # the engine log (serve routes "probe" there)
END_WAIT_S = 120.0          # arm B's wait for what it holds, once the A/B ends
DRAINED_CHECK_S = 0.02


class ArmB:
    def __init__(self, host: EngineHost, engine: Engine, publish: Callable[[Any], None],
                 trace_name: str) -> None:
        self.host, self.engine, self._publish = host, engine, publish
        self._trace_name = trace_name
        self._stop = threading.Event()
        self._loop: ServingLoop | None = None
        self._splitter: Splitter | None = None
        self._thread: threading.Thread | None = None
        self.error: str | None = None
        self._lock = threading.Lock()
        self._ending = False

    def start(self, shapes: int, seconds: float) -> None:
        """Join the served session and take every other arrival from now on."""
        from probe.engine.process.live_reporter import LiveReporter
        from probe.engine.serving import ServingLoop

        host, arm = self.host, self.engine
        serving, loop_a = host.engine, host.loop
        assert serving is not None and loop_a is not None
        side_session, side_start = arm.session, arm.clock.start
        arm.clock.start = serving.clock.start
        arm.session = serving.session
        arm.config_id = serving.session.register(arm.options,
                                                 (ab_arm_note(serving.config_id),))
        follow_session(arm)
        arm.bandwidth = serving.bandwidth
        carry_side_compiles(arm, side_session, side_start, serving.config_id)
        arrivals = RelayedArrivals(1.0)
        loop = self._loop = ServingLoop(arm, arrivals, on_records=host._on_records)
        loop.after_step = host._after_step
        self._thread = threading.Thread(target=self._serve, name="arm-b", daemon=True)
        self._thread.start()
        reporter = LiveReporter(loop, self._trace_name)
        threading.Thread(target=publish_views, name="arm-b-views", daemon=True,
                         args=(reporter.build, self._send, ArmLive, self._stop)).start()
        self._publish(ArmStarted(arm.config_id, arm.options,
                                 serving.session.config_notes(arm.config_id)))

        def hand(diverted: Any) -> bool:
            if self._stop.is_set():         # arm B has stopped: arm A serves it
                return False
            handed = diverted.request
            arrivals.put(ScheduledRequest(handed.seq, handed.request,
                                          arm.clock.start + handed.arrival_s))
            return True

        self._splitter = Splitter(serving.clock, hand)
        loop_a.divert = self._splitter
        loop_a.split_queue()
        self._publish(ABSplit(shapes, seconds))

    def _send(self, event: Any) -> bool:
        self._publish(event)
        return True

    def _serve(self) -> None:
        assert self._loop is not None
        self.engine.probe.watch_only(threading.get_ident())
        try:
            self._loop.run(self._stop)
        except Exception as exc:  # arm A serves on, and what B held
            log.exception("the side engine failed")
            self.error = f"{type(exc).__name__}: {exc}"
            threading.Thread(target=self.end, args=(False, lambda a, b: None),
                             name="arm-b-end", daemon=True).start()

    def end(self, adopt: bool, on_adopted: Callable[[Engine, Engine], None]) -> None:
        """On a thread of its own: every arrival to arm A again, arm B finishes what it holds,
        then (`adopt`) the serving loop cuts over to it, or it is dropped."""
        with self._lock:
            if self._ending:
                return
            self._ending = True
        loop_a = self.host.loop
        assert loop_a is not None and self._loop is not None and self._splitter is not None
        loop_a.divert = None
        deadline = time.monotonic() + END_WAIT_S
        loop, handed = self._loop, self._splitter.diverted
        while (self.error is None and time.monotonic() < deadline
               and loop.completed + loop.failed < len(handed)):
            time.sleep(DRAINED_CHECK_S)
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=10.0)
        left = self._unserved()
        if left:
            loop_a.carry(left)
        if adopt and self.error is None and not left:
            loop_a.request_engine(lambda serving: self._adopted(serving, on_adopted))
            return
        self.engine.close()
        how = "failed" if self.error else "keep"
        self._publish(ABEnded(how, self.error or ("" if not adopt else
                                                  f"arm B left {len(left)} request(s) to A")))

    def _adopted(self, serving: Engine, on_adopted: Callable[[Engine, Engine], None]
                 ) -> Engine:
        self.engine.probe.watch_only(threading.get_ident())
        on_adopted(serving, self.engine)
        self._publish(ABEnded("adopt"))
        return self.engine

    def _unserved(self) -> list[ScheduledRequest]:
        """What arm B was handed and has no record of."""
        if self._splitter is None:
            return []
        recorded = {r.seq for r in self.engine.session.freeze().records
                    if r.config_id == self.engine.config_id}
        return [s for seq, s in sorted(self._splitter.diverted.items()) if seq not in recorded]
