"""What a running `infertop serve` does for the dashboards attached to it: their live views,
built from the served session every PUBLISH_INTERVAL_S as the replay engine builds its own
(LiveReporter, publish_views), while at least one is attached; the steering dashboard's asks;
and the warm switch inside the server.

The warm switch: a second Engine with the new options is built and prewarmed on a thread of
its own beside the serving one (the shapes the server warmed at its start, through the path the
config serves with), then the serving loop cuts over to it at a step boundary: it continues the
served session (its clock, its journal) as a new segment, its prewarm compiles charged to it
and said with what they cost the config that served meanwhile. No request waits on the side
compile: each engine's compile probe hears only its own thread (CompileProbe.watch_only), and
the new engine is not built with a dynamo reset (Engine(beside=True)), so the serving one's
compiled code stays. A side compile that fails, falls back to eager or passes WARM_LIMIT_S
leaves the serving config untouched: said on every dashboard (WarmFailed) and in the journal
(a notice of the serving engine), and the server goes on.

The live A/B (ABStart) warms arm B the same way, then splits the arrivals between the two
engines until ABEnd adopts or drops it (live_ab.py).

Not offered on a live server, each answered with a Role saying so: pausing, the rate factor
(the clients set the load) and restarting the engine."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from probe.analysis.side_compile_cost import side_compiles
from probe.contract.engine_link import (
    ABEnd,
    ABStart,
    Ask,
    CutOverDone,
    EngineFailed,
    EngineLive,
    EngineLoading,
    ResetWindow,
    Role,
    SetOptions,
    Steer,
    StopSide,
    WarmFailed,
    WarmProgress,
    WarmSwitch,
)
from probe.contract.options import OptConfig
from probe.engine.process.view_publisher import publish_views
from probe.engine.session_swap import carry_side_compiles
from probe.server.attach.board import Board
from probe.server.attach.live_ab import ArmB
from probe.server.engine_host import served_widths, warm

if TYPE_CHECKING:
    from probe.engine.engine import Engine
    from probe.engine.process.live_reporter import LiveReporter
    from probe.server.engine_host import EngineHost

log = logging.getLogger(__name__)   # the engine log (serve routes "probe" there)
STOP_JOIN_S = 2.0           # stop's wait for the publisher thread
WARM_LIMIT_S = 900.0        # a side compile still running after this is given up
WAIT_S = 0.2                # how often the publisher looks for a dashboard or a ready engine


@dataclass
class _Side:
    """One warm switch under way."""
    options: OptConfig
    started: float
    engine: Engine | None = None
    shapes: int = 0
    seconds: float = 0.0
    over: bool = False          # given up, failed or cut over: nothing more happens to it
    ab: bool = False            # a live A/B's arm B, not a switch
    warmed: bool = False
    arm: ArmB | None = None     # the A/B's arm B, once it serves


class Hub:
    def __init__(self, host: EngineHost, *, trace_name: str) -> None:
        self.host, self.board = host, Board()
        self._trace_name = trace_name
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._side: _Side | None = None
        self.reporter: LiveReporter | None = None
        self._publisher = threading.Thread(target=self._publish, name="attach-views",
                                           daemon=True)

    # -- the publisher --------------------------------------------------------------------------
    def start(self) -> None:
        self._publisher.start()

    def stop(self) -> None:
        """Bounded: the publisher ends within a wait of its loop (no daemon thread left
        building a view while the interpreter shuts down)."""
        self._stop.set()
        with self._lock:
            side, self._side = self._side, None
        if side is not None:
            side.over = True
        if self._publisher.is_alive():
            self._publisher.join(timeout=STOP_JOIN_S)

    def _publish(self) -> None:
        from probe.engine.process.live_reporter import LiveReporter

        while self.host.loop is None or self.host.state not in ("ready", "draining"):
            if self._stop.wait(WAIT_S) or self.host.state in ("failed", "stopped"):
                self._say_failed()
                return
        self.reporter = LiveReporter(self.host.loop, self._trace_name)
        publish_views(self.reporter.build, self._send, EngineLive, self._stop, self._before)
        self._say_failed()

    def _before(self) -> None:
        """Build no view while nobody looks; drop the dashboards that stopped fetching."""
        while not self.board.attached.wait(WAIT_S):
            if self._stop.is_set():
                return
        self.board.drop_stale()

    def _send(self, heard: Any) -> bool:
        self.board.publish(heard)
        return True

    def _say_failed(self) -> None:
        if self.host.state == "failed":
            self.board.publish(EngineFailed(f"the server's engine failed: {self.host.error}"))

    # -- a dashboard attaches, asks ---------------------------------------------------------------
    def attach(self) -> tuple[str, bool]:
        link_id, steers = self.board.attach()
        state = self.host.state
        if state != "ready":
            self.board.tell(link_id, EngineLoading(f"the server is {state}"))
        side = self._side
        if side is not None and not side.over:
            self.board.tell(link_id, WarmProgress(
                f"a warm switch to {side.options.label()} is under way", side.shapes))
        return link_id, steers

    def ask(self, link_id: str, ask: Ask) -> None:
        """Called from the event loop: never blocks on the engine."""
        if isinstance(ask, Steer):
            self.board.steer(link_id)
            return
        if not self.board.steers(link_id):
            self.board.tell(link_id, Role(False, f"{type(ask).__name__} refused: this "
                                                 f"dashboard watches; the one that steers "
                                                 f"must leave first"))
            return
        if isinstance(ask, (SetOptions, WarmSwitch, ABStart)):
            self._switch_to(link_id, ask.options, ab=isinstance(ask, ABStart))
        elif isinstance(ask, StopSide):
            self._give_up(link_id)
        elif isinstance(ask, ABEnd):
            self._end_ab(link_id, ask.adopt)
        elif isinstance(ask, ResetWindow):
            if self.reporter is not None:
                self.reporter.reset_window()
        else:
            self.board.tell(link_id, Role(True, f"{type(ask).__name__} is not offered on a "
                                                f"live server ({_WHY_NOT.get(type(ask).__name__, 'not yet')})"))

    def session_document(self) -> dict | None:
        """The served session so far, as `--out` will hold it (None before the engine loaded):
        a dashboard fetches it and writes it on its own machine."""
        engine = self.host.engine
        return None if engine is None else self.host.document(engine)

    # -- the warm switch -----------------------------------------------------------------------
    def _switch_to(self, link_id: str, options: OptConfig, ab: bool = False) -> None:
        engine, loop = self.host.engine, self.host.loop
        if engine is None or loop is None or self.host.state != "ready":
            self.board.tell(link_id, Role(True, f"no switch: the server is {self.host.state}"))
            return
        if options == engine.options:
            self.board.tell(link_id, Role(True, f"the server already serves "
                                                f"{options.label()}"))
            return
        with self._lock:
            if self._side is not None and not self._side.over:
                what = "an A/B against" if self._side.ab else "a warm switch to"
                self.board.tell(link_id, Role(True, f"{what} {self._side.options.label()} is "
                                                    f"under way: end it first"))
                return
            side = self._side = _Side(options, time.perf_counter(), ab=ab)
        threading.Thread(target=self._warm, args=(side,), name="warm-side",
                         daemon=True).start()
        timer = threading.Timer(WARM_LIMIT_S, self._too_long, args=(side,))
        timer.daemon = True
        timer.start()

    def _warm(self, side: _Side) -> None:
        """The side engine's thread: build, prewarm, then ask the loop to cut over."""
        from probe.engine.engine import Engine

        host = self.host
        try:
            self.board.publish(WarmProgress(f"loading {host.settings.model} for "
                                            f"{side.options.label()} beside the serving config"))
            engine = side.engine = Engine(host.settings, side.options, beside=True)
            serving = host.engine
            if serving is not None and engine.options == serving.options:
                # the options as served (resolved): nothing would change
                self._failed(side, f"the server already serves {engine.options.label()}",
                             "info")
                return
            served = served_widths(serving.session.freeze().records if serving else ())
            side.shapes = len(engine.bucket_edges) or len(served) or 1
            self.board.publish(WarmProgress(
                f"prewarming {side.shapes} shape{'s' * (side.shapes != 1)} beside the serving "
                f"config", side.shapes))
            started = time.perf_counter()
            side.shapes = warm(engine, served) or side.shapes
            side.seconds = time.perf_counter() - started
            errors = [n.text for n in engine.session.freeze().notices if n.level == "error"]
            if errors:      # a compile that failed: the engine would serve it eager
                raise RuntimeError(errors[0])
        except Exception as exc:  # the serving config is untouched
            log.exception("the side engine failed")
            self._failed(side, f"{type(exc).__name__}: {exc}")
            return
        side.warmed = True
        if side.over:       # given up meanwhile
            engine.close()
            return
        assert host.loop is not None
        if not side.ab:
            host.loop.request_engine(lambda serving: self._cut_over(serving, side))
            return
        arm = ArmB(host, engine, self.board.publish, self._trace_name)
        try:
            arm.start(side.shapes, side.seconds)
        except Exception as exc:  # arm A serves on, alone
            log.exception("the side engine failed")
            host.loop.divert = None
            self._failed(side, f"arm B could not join: {type(exc).__name__}: {exc}")
            return
        side.arm = arm

    def _cut_over(self, serving: Engine, side: _Side) -> Engine:
        """On the serving thread, no request running: the side engine continues the session."""
        new = side.engine
        with self._lock:
            if side.over or new is None:
                return serving
            side.over = True
        try:
            side_session, side_start = new.session, new.clock.start
            new.clock.start = serving.clock.start       # the session's clock, the probe's too
            new.session, new.config_id = serving.session, ""
            new.set_options(side.options)               # a new segment of the served session
            new.probe.watch_only(threading.get_ident())
            new.bandwidth = serving.bandwidth
            carry_side_compiles(new, side_session, side_start, serving.config_id)
        except Exception as exc:  # the serving engine goes on
            log.exception("the side engine failed")
            side.over = False
            self._failed(side, f"the cut over failed: {type(exc).__name__}: {exc}")
            return serving
        found = side_compiles(new.session.freeze(), new.config_id)
        new.notify("info", f"warm switch to {new.config_id} ({new.options.label()}) cut over"
                           + (f": {found.text()}" if found is not None else ""))
        self.host.engine = new
        serving.close()
        self.board.publish(CutOverDone(side.shapes, side.seconds))
        return new

    def _failed(self, side: _Side, error: str, level: str = "error") -> None:
        """The switch ends without a cut over: said on every dashboard, and (but an "info"
        that changes nothing) in the journal, as a notice of the serving engine."""
        with self._lock:
            if side.over:
                return
            side.over = True
        if side.engine is not None:
            side.engine.close()
        serving = self.host.engine
        if serving is not None and level != "info":
            serving.notify(level, f"warm switch to {side.options.label()} "
                                  f"{'failed' if level == 'error' else 'given up'} ({error}); "
                                  f"{serving.options.label()} serves on")
        self.board.publish(WarmFailed(error))

    def _withdraw(self, side: _Side, error: str, level: str = "error") -> None:
        """The switch ends before its engine serves: a cut over asked of the loop is withdrawn."""
        loop = self.host.loop
        if loop is not None:
            loop.withdraw_engine()
        self._failed(side, error, level)

    def _too_long(self, side: _Side) -> None:
        if not (side.over or side.warmed):
            self._withdraw(side, f"the side compile passed its limit of {WARM_LIMIT_S:g} s")

    def _give_up(self, link_id: str) -> None:
        side = self._side
        if side is None or side.over:
            self.board.tell(link_id, Role(True, "no warm switch to give up"))
            return
        if side.arm is not None:        # an A/B under way: arm A keeps serving
            self._end_ab(link_id, adopt=False)
            return
        self._withdraw(side, "given up from the dashboard", "warning")

    # -- the live A/B --------------------------------------------------------------------------
    def _end_ab(self, link_id: str, adopt: bool) -> None:
        side = self._side
        if side is None or side.over or not side.ab:
            self.board.tell(link_id, Role(True, "no A/B is running"))
            return
        if side.arm is None:            # arm B still warming: nothing to adopt yet
            if adopt:
                self.board.tell(link_id, Role(True, "arm B is still warming: nothing to "
                                                    "adopt yet"))
                return
            self._withdraw(side, "A/B given up before arm B served", "warning")
            return
        arm = side.arm

        def end() -> None:
            arm.end(adopt, self._adopted)
            side.over = True

        threading.Thread(target=end, name="ab-end", daemon=True).start()

    def _adopted(self, serving: Engine, arm: Engine) -> None:
        """On the serving thread: arm B serves everything from now on."""
        self.host.engine = arm
        serving.close()
        arm.notify("info", f"A/B: {arm.config_id} ({arm.options.label()}) adopted; it serves "
                           f"every arrival from now on")


_WHY_NOT = {
    "Pause": "the clients send the load", "Resume": "the clients send the load",
    "SetSpeed": "the clients set the rate",
    "Restart": "the server's engine is restarted by restarting `infertop serve`",
    "GiveUp": "a switch's compile runs beside the serving config: give up the switch instead",
    "SaveSnapshot": "a dashboard fetches the session itself and writes it on its own machine",
}
