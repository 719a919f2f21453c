"""What runs in the engine process: receive the workload, load the engine, continue the
session from its journal when this is a restart, serve the replay, publish live views,
obey the dashboard's commands. Started by probe.engine.process.engine_process.EngineClient; imports torch only
inside the process."""

from __future__ import annotations

import os
import threading
import traceback
from dataclasses import replace
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING

from probe.analysis.fallbacks import CALIBRATION_FLOOR, degraded_event
from probe.analysis.side_compile_cost import side_compiles
from probe.common.atomic import write_json_atomic
from probe.common.clock import SessionClock
from probe.common.errors import BadInput
from probe.contract import protocol
from probe.contract.protocol import JOURNAL_STOPPED
from probe.contract.session import ab_arm_note
from probe.engine.measure.bandwidth_cache import machine_bandwidth
from probe.engine.process.ab_split import Splitter, end_split
from probe.engine.process.carried_queue import scheduled_again
from probe.engine.process.engine_launch import EngineLaunch
from probe.engine.process.headless_journal import dispatch_of, write_header
from probe.engine.process.resumed_replay import ContinuedReplayer
from probe.engine.process.view_publisher import publish_views
from probe.engine.process.warm_side import warm_up
from probe.engine.session_swap import carry_side_compiles, count_visits, serving_config
from probe.engine.workload_setup import PreparedWorkload
from probe.session_store.journal import Dispatch, JournaledSession, JournalWriter
from probe.session_store.journal_reader import Journal, read_journal
from probe.session_store.restart_carry import restart_marks
from workloads.replayer import ScheduledRequest
from workloads.thinning import factor_text

if TYPE_CHECKING:
    from probe.engine.calibration import RateChoice, RateWatch


class _Sender:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._lock = threading.Lock()

    def __call__(self, event) -> bool:
        try:
            with self._lock:
                self._conn.send(event)
            return True
        except (BrokenPipeError, EOFError, OSError):
            return False


def _redirect_output(log_path: str) -> None:
    """The child shares the dashboard's terminal: send its stdout/stderr (torch warnings,
    compiler output) to its log, or discard them when there is none; never to the screen.
    The log was created by the dashboard in a private folder; O_NOFOLLOW still refuses a
    symlink put in its place (the output is then discarded: no log is no reason not to serve)."""
    try:
        fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW) if log_path else -1
    except OSError:
        fd = -1
    if fd < 0:
        fd = os.open(os.devnull, os.O_WRONLY)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def thread_only_progress_lock() -> None:
    """Inductor's compile draws tqdm progress bars, and tqdm's default lock holds a
    multiprocessing RLock: a POSIX semaphore registered with the resource tracker this spawned
    process shares with the dashboard. An engine killed mid-compile (quit during a compile)
    never unregisters it, and the tracker printed "leaked semaphore" on the user's terminal
    after the dashboard exited. The bars go to this process's log from its own threads only, so
    a thread lock is all they need."""
    try:
        from tqdm import tqdm
    except ImportError:  # no tqdm, no bars
        return
    tqdm.set_lock(threading.RLock())


def prepare_engine_process(launch: EngineLaunch) -> None:
    """What the process sets up before torch is imported: where its output goes, its progress
    bars' lock, and torch's trace folder (torch reads it at import)."""
    _redirect_output(launch.log_path)   # before torch/transformers print import warnings
    thread_only_progress_lock()
    if launch.torch_trace_dir:
        os.makedirs(launch.torch_trace_dir, exist_ok=True)
        os.environ["TORCH_TRACE"] = launch.torch_trace_dir


def engine_main(launch: EngineLaunch, conn: Connection) -> None:
    """The engine process: receive the workload, load, (prewarm), serve the replay, publish
    live views. Whatever ends it early is told to the dashboard and logged."""
    prepare_engine_process(launch)
    send = _Sender(conn)
    try:
        workload = receive_workload(conn)
        if workload is not None:
            _serve(replace(launch, workload=workload), workload, conn, send)
    except Exception as exc:
        traceback.print_exc()
        send(protocol.EngineFailed(f"the engine stopped: {type(exc).__name__}: {exc}"))


def receive_workload(conn: Connection) -> PreparedWorkload | None:
    """The first message; None when the dashboard shut us down or went away first."""
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return None
        if isinstance(message, protocol.Workload):
            return message.workload
        if isinstance(message, protocol.Shutdown):
            return None


def _earlier_session(launch: EngineLaunch) -> tuple[Journal | None, str | None]:
    """A restart's session so far (None: nothing to continue), and why it could not be read."""
    if launch.predecessor is None or not launch.journal_path:
        return None, None
    try:
        return read_journal(launch.journal_path), None
    except BadInput as exc:
        return None, f"the session so far could not be read back ({exc}); a new one starts"


def _journal(engine, launch: EngineLaunch, earlier: Journal | None
             ) -> tuple[JournalWriter, tuple[Dispatch, ...]]:
    """Serve into a JournaledSession: `earlier`'s records and then ours, every change appended
    to the journal as it is made. A restarted engine marks how its predecessor ended: after a
    death it fails the requests it held; after a stop the dashboard asked for (x, a cut over)
    it returns them, to serve (restart_carry)."""
    marks = (restart_marks(earlier, launch.predecessor)
             if earlier is not None and launch.predecessor is not None else None)
    writer = JournalWriter(launch.journal_path)
    session = JournaledSession(writer, earlier.data if earlier else None, per_visit=True)
    # Engine made a Session of its own and registered its options there: register them here.
    engine.session, engine.config_id = session, ""
    engine.set_options(launch.options)
    if marks is None:
        return writer, ()
    for record in marks.lost:
        session.add_record(record)
    if marks.abandoned is not None:
        session.add_events([marks.abandoned])
    session.add_notice(marks.notice)
    return writer, marks.carried


def _serve(launch: EngineLaunch, workload: PreparedWorkload, conn: Connection,
           send: _Sender) -> None:
    """`workload`: the launch's, received over the pipe."""
    from probe.engine.engine import Engine
    from probe.engine.process.headless import document_for
    from probe.engine.process.live_reporter import LiveReporter

    settings = launch.settings
    earlier, unreadable = _earlier_session(launch)
    send(protocol.EngineLoading(f"loading {settings.model} on {settings.device}"))
    try:
        engine = Engine(settings, launch.options,
                        clock=earlier.clock() if earlier else SessionClock())
    except Exception as exc:
        traceback.print_exc()
        send(protocol.EngineFailed(f"the engine could not start: {type(exc).__name__}: {exc}"))
        return
    side = None     # a warm switch's side engine: the session and clock it compiled in
    if launch.warm_side:    # a warm switch's side engine: prewarm, then wait to be cut over
        side = engine.session, engine.clock.start
        longest = max(workload.trace.output_lengths(), default=2)
        predecessor = warm_up(engine, conn, send, min(max(longest, 2), settings.max_new_tokens),
                              launch)
        if predecessor is None:
            engine.close()
            return
        launch = replace(launch, predecessor=predecessor, warm_side=False)
        earlier, unreadable = _earlier_session(launch)
        if earlier is not None:     # the session's clock, shared with the compile probe
            engine.clock.start = earlier.clock().start
    writer: JournalWriter | None = None
    carried: tuple[Dispatch, ...] = ()
    if unreadable:
        engine.notify("error", unreadable)
    elif launch.journal_path:
        try:
            writer, carried = _journal(engine, launch, earlier)
        except OSError as exc:
            engine.notify("warning", f"no session journal ({exc.strerror or exc}): a restarted "
                                     f"engine will start a new session")
    if side is not None and engine.session is not side[0]:
        _charge_side_compiles(engine, *side, earlier)
    if writer is None and side is None:     # no journal: the engine's own session, per visit
        count_visits(engine)
    engine.session.set_slo(launch.slo)
    speed, watch = _measure(engine, launch, workload, send)
    if writer is not None and earlier is None:   # measured first: the header has the roofline
        write_header(writer, engine, workload, launch.trace_name)
    replayer, loop = _replay(engine, launch, workload, speed, earlier, writer)
    if carried:     # served first: they arrived before anything the replayer dispatches now
        loop.carry(scheduled_again(carried, workload.trace, engine.clock))
    reporter = LiveReporter(loop, launch.trace_name)
    exporter = _exporter(engine, loop, launch.metrics_port)
    stop = threading.Event()
    splitter: list[Splitter] = []      # the live A/B's, while one runs

    def handle(command) -> None:
        if isinstance(command, (protocol.Split, protocol.KnownConfig, protocol.EndSplit)):
            split_command(command)
        elif isinstance(command, protocol.SetOptions):
            loop.request_options(command.options)
        elif isinstance(command, protocol.SetSpeed):
            if watch is not None and command.speed != replayer.speed:
                watch.user_set_rate()
            replayer.set_speed(command.speed)
        elif isinstance(command, protocol.Pause):
            replayer.pause()
        elif isinstance(command, protocol.Resume):
            replayer.resume()
        elif isinstance(command, protocol.ResetWindow):
            reporter.reset_window()
        elif isinstance(command, protocol.SaveSnapshot):
            try:
                write_json_atomic(command.path, document_for(
                    engine, workload, launch.trace_name,
                    replay={"speed": replayer.speed, "queue_depth": loop.queue_depth,
                            "dispatched": loop.dispatched,
                            "offered_rps": loop.offered_rps()}))
                reporter.saved = os.path.basename(command.path)    # the checklist says it
                send(protocol.SnapshotSaved(command.path))
            except OSError as exc:
                send(protocol.SnapshotFailed(command.path, f"{exc.strerror or exc}"))
        elif isinstance(command, protocol.Shutdown):
            stop.set()

    def split_command(command) -> None:
        if isinstance(command, protocol.Split):
            splitter[:] = [Splitter(engine.clock, send)]
            loop.divert = splitter[0]
            loop.split_queue()
        elif isinstance(command, protocol.KnownConfig):
            # arm B, as its own engine registered it, marked as the A/B's arm against the
            # config served (arm A), which stays this engine's current one
            engine.session.register(command.options,
                                    command.notes + (ab_arm_note(engine.config_id),))
        elif splitter:
            loop.divert = None
            arm = command.arm_config_id
            try:
                left = end_split(loop, splitter.pop(), launch.journal_path, arm)
            except Exception as exc:  # B's records stay in the journal, which `s` saves from
                traceback.print_exc()
                engine.notify("error", f"A/B ended, but {arm}'s records could not be read "
                                       f"back here ({type(exc).__name__}: {exc})")
                return
            engine.notify("info", f"A/B ended: {arm}'s records are kept in the session"
                                  + (f"; the {left} request(s) it held are served here"
                                     if left else ""))

    def commands() -> None:
        while not stop.is_set():
            try:
                if conn.poll(0.2):
                    handle(conn.recv())
            except (EOFError, OSError):  # the dashboard went away
                stop.set()

    journal_error_said = False

    def say_journal_stopped() -> None:
        nonlocal journal_error_said
        if writer is not None and writer.error and not journal_error_said:
            engine.notify("error", f"{writer.error}: {JOURNAL_STOPPED}; a restarted engine "
                                   f"will start a new session")
            journal_error_said = True

    def hold_the_load() -> None:
        """The calibrated load held while the machine's speed moves (RateWatch); a fault
        here stops the watch, never the views."""
        if watch is None or watch.stopped or splitter or replayer.paused:
            return
        try:
            change = watch.check(engine.session.freeze().records, engine.config_id)
        except Exception:
            traceback.print_exc()
            watch.stopped = True
            return
        if change is not None:
            replayer.set_speed(change.after.speed)
            engine.notify("warning", change.text())

    def before_each_view() -> None:
        say_journal_stopped()
        hold_the_load()

    threading.Thread(target=commands, name="commands", daemon=True).start()
    threading.Thread(target=publish_views, name="publisher", daemon=True,
                     args=(reporter.build, send, protocol.EngineLive, stop,
                           before_each_view)).start()
    if launch.options.prewarm == "on":     # the serving loop prewarms before it serves
        send(protocol.EngineLoading("prewarming bucket shapes"))
    loop.run(stop)
    if not stop.is_set():
        send(protocol.ReplayFinished())
        stop.wait()
    if exporter is not None:
        exporter.close()
    engine.close()
    if writer is not None:
        writer.close()


def _charge_side_compiles(engine, side_session, side_clock_start: float,
                          earlier: Journal | None) -> None:
    """The warm switch's prewarm compiles, run in the side engine's own session, charged to
    the config it serves now in the session it joined, and said with what they cost the
    config that served meanwhile (the session keeps the notice: `snapshot show` says it)."""
    beside = serving_config(earlier.data if earlier is not None else None)
    if not carry_side_compiles(engine, side_session, side_clock_start, beside) or not beside:
        return
    found = side_compiles(engine.session.freeze(), engine.config_id)
    if found is not None:
        engine.notify("info", f"warm switch to {engine.config_id} ({engine.options.label()}) "
                              f"cut over: {found.text()}")


def _measure(engine, launch: EngineLaunch, workload: PreparedWorkload, send: _Sender
             ) -> tuple[float, RateWatch | None]:
    """This machine's bandwidth (for the roofline), and the replay speed: the one given (a
    restart gets the speed last served) or half the engine's measured capacity, then held
    there while the capacity moves under the run (the RateWatch)."""
    from probe.engine.calibration import RateWatch, choose_speed

    send(protocol.EngineLoading("measuring the bandwidth at which this machine re-reads the model's "
                          "weights, for the roofline (once per machine, then cached)"))
    try:
        engine.bandwidth = machine_bandwidth(engine.device, engine.fp32_step_bytes())
    except Exception as exc:  # no roofline is no reason not to serve
        engine.notify("warning", f"no roofline: bandwidth not measured ({type(exc).__name__})")
    if launch.speed is not None:
        return launch.speed, None
    send(protocol.EngineLoading("measuring what the engine serves one at a time, to replay at "
                          "half of it"))
    try:
        choice = choose_speed(engine, workload.trace)
    except Exception as exc:  # a failed measurement leaves the trace's own rate
        engine.notify("warning", f"capacity not measured ({type(exc).__name__}: {exc}); "
                                 f"replaying at the trace's rate")
        return 1.0, None
    if choice is None:
        return 1.0, None
    engine.notify("info", choice.text())
    _say_calibration_floor(engine, choice)
    return choice.speed, RateWatch(choice, engine.config_id)


def _say_calibration_floor(engine, choice: RateChoice) -> None:
    """A calibration stopped at its floor offers more than it aims at: said as a fallback."""
    from probe.engine.calibration import TARGET_LOAD

    if not choice.at_floor:
        return
    text = (f"the load calibration stopped at its floor, {factor_text(choice.speed)}: offered "
            f"load {choice.load:.0%} of the measured capacity ({choice.capacity_rps:.2f} req/s),"
            f" not the {TARGET_LOAD:.0%} it aims at, so the baseline is saturated from the "
            f"start; a slower replay needs a slower trace")
    engine.session.add_events([degraded_event(engine.clock.now_s(), CALIBRATION_FLOOR, text,
                                              engine.config_id or None)])
    engine.notify("warning", text)


def _replay(engine, launch: EngineLaunch, workload: PreparedWorkload, speed: float,
            earlier: Journal | None, writer: JournalWriter | None):
    """The replayer (going on after the last request `earlier` dispatched, each dispatch
    journaled) and the serving loop over it, its counters going on with the session."""
    from probe.engine.serving import ServingLoop

    on_dispatch = None
    if writer is not None:
        def journal_dispatch(scheduled: ScheduledRequest) -> None:
            writer.dispatch(dispatch_of(engine, scheduled))
        on_dispatch = journal_dispatch

    replayer = ContinuedReplayer(workload.trace,
                                 first_seq=earlier.next_seq if earlier else 0, speed=speed,
                                 loop=launch.loop, max_requests=launch.max_requests,
                                 on_dispatch=on_dispatch)
    loop = ServingLoop(engine, replayer)
    if earlier is not None:
        records = engine.session.freeze().records
        loop.dispatched = replayer.first_seq
        loop.completed = sum(r.ok for r in records)
        loop.failed = len(records) - loop.completed
    return replayer, loop


def _exporter(engine, loop, port: int | None):
    if port is None:
        return None
    from probe.monitoring.prometheus import PrometheusExporter
    try:
        exporter = PrometheusExporter(engine.session, lambda: loop.queue_depth, port=port)
    except OSError as exc:
        engine.notify("error", f"--metrics-port {port}: cannot listen ({exc.strerror or exc}); "
                               f"no metrics this session")
        return None
    engine.notify("info", f"Prometheus metrics on http://127.0.0.1:{exporter.port}/metrics")
    return exporter
