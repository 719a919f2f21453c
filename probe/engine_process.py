"""The engine in a process of its own, so a minute-long CPU compile (which holds the GIL) never
freezes the dashboard. The dashboard talks to it through `EngineClient`, with the frozen
messages of probe/protocol.py over a pipe."""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
import tempfile
import threading
import traceback
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection

from probe import protocol
from probe.options import OptConfig, parse_opts
from probe.settings import EngineSettings
from probe.workload_setup import PreparedWorkload, prepare_workload

PUBLISH_INTERVAL_S = 0.5


@dataclass(frozen=True)
class EngineProcessConfig:
    settings: EngineSettings
    options: OptConfig
    workload: PreparedWorkload
    trace_name: str
    speed: float = 1.0
    max_requests: int | None = None
    loop: bool = True
    log_path: str = ""


def dashboard_threads() -> int:
    """Leave a core to the dashboard: on a small machine two OpenMP threads sharing a core with
    the UI spin against each other (t5-small eager went from 34 to 132 ms/token here)."""
    return max(1, (os.cpu_count() or 2) - 1)


def config_from_args(args) -> EngineProcessConfig:
    """From the dashboard's CLI arguments; ConfigError/TraceError for bad input (exit 2)."""
    options = parse_opts(args.opt or [])
    workload = prepare_workload(args.trace, buckets=getattr(args, "buckets", None),
                                max_input=getattr(args, "max_input", 512),
                                max_output=getattr(args, "max_output", 512))
    settings = EngineSettings(model=args.model, device=args.device,
                              bucket_edges=workload.bucket_edges,
                              max_input_tokens=getattr(args, "max_input", 512),
                              max_new_tokens=workload.max_new_tokens,
                              threads=getattr(args, "threads", None) or dashboard_threads())
    log_path = os.path.join(tempfile.gettempdir(), f"infertop-engine-{os.getpid()}.log")
    return EngineProcessConfig(settings, options, workload, args.trace, speed=args.speed,
                               max_requests=getattr(args, "requests", None), log_path=log_path)


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
    compiler output) to a log file instead of the screen."""
    if not log_path:
        return
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def engine_main(config: EngineProcessConfig, conn: Connection) -> None:
    """The engine process: load, (prewarm), serve the replay, publish live snapshots."""
    _redirect_output(config.log_path)   # before torch/transformers print import warnings
    from probe.engine import Engine
    from probe.live_reporter import LiveReporter
    from probe.serving import ServingLoop
    from probe.headless import document_for
    from probe.snapshot import write_json_atomic
    from workloads.replayer import OpenLoopReplayer

    send = _Sender(conn)
    settings = config.settings
    send(protocol.Loading(f"loading {settings.model} on {settings.device}"))
    try:
        engine = Engine(settings, config.options)
    except Exception as exc:
        traceback.print_exc()
        send(protocol.EngineFailed(f"the engine could not start: {type(exc).__name__}: {exc}"))
        return
    replayer = OpenLoopReplayer(config.workload.trace, speed=config.speed, loop=config.loop,
                                max_requests=config.max_requests)
    loop = ServingLoop(engine, replayer)
    reporter = LiveReporter(loop, config.trace_name)
    stop = threading.Event()

    def handle(command) -> None:
        if isinstance(command, protocol.SetOptions):
            loop.request_options(command.options)
        elif isinstance(command, protocol.SetSpeed):
            replayer.set_speed(command.speed)
        elif isinstance(command, protocol.Pause):
            replayer.pause()
        elif isinstance(command, protocol.Resume):
            replayer.resume()
        elif isinstance(command, protocol.ResetWindow):
            reporter.reset_window()
        elif isinstance(command, protocol.SaveSnapshot):
            try:
                write_json_atomic(command.path, document_for(engine, config.workload, config.trace_name))
                send(protocol.SnapshotSaved(command.path))
            except OSError as exc:
                send(protocol.SnapshotFailed(command.path, f"{exc.strerror or exc}"))
        elif isinstance(command, protocol.Shutdown):
            stop.set()

    def commands() -> None:
        while not stop.is_set():
            try:
                if conn.poll(0.2):
                    handle(conn.recv())
            except (EOFError, OSError):  # the dashboard went away
                stop.set()

    def publish() -> None:
        while not stop.wait(PUBLISH_INTERVAL_S):
            try:
                snapshot = reporter.build()
            except Exception:  # a reporting fault must not stop serving
                traceback.print_exc()
                continue
            if not send(protocol.Live(snapshot)):
                stop.set()

    threading.Thread(target=commands, name="commands", daemon=True).start()
    threading.Thread(target=publish, name="publisher", daemon=True).start()
    if config.options.prewarm == "on":
        send(protocol.Loading("prewarming bucket shapes"))
        engine.prewarm()
    loop.run(stop)
    if not stop.is_set():
        send(protocol.Finished())
        stop.wait()
    engine.close()


class EngineClient:
    """The dashboard's handle on the engine process (implements tui's EngineHandle)."""

    def __init__(self, config: EngineProcessConfig) -> None:
        self.config = config
        self._options = config.options
        self._process: mp.process.BaseProcess | None = None
        self._conn: Connection | None = None
        self._failure_reported = False

    def start(self) -> None:
        context = mp.get_context("spawn")
        parent, child = context.Pipe()
        config = replace(self.config, options=self._options)
        self._process = context.Process(target=engine_main, args=(config, child),
                                        name="infertop-engine", daemon=True)
        # A running Textual app replaces sys.stdout/stderr with objects that have no file
        # descriptor, and multiprocessing hands sys.stderr.fileno() to its helper process
        # ("bad value(s) in fds_to_keep"): give it the real streams while it starts.
        streams = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        try:
            self._process.start()
        finally:
            sys.stdout, sys.stderr = streams
        child.close()
        self._conn = parent
        self._failure_reported = False

    def send(self, command) -> None:
        if isinstance(command, protocol.SetOptions):
            self._options = command.options
        if self._conn is None:
            return
        try:
            self._conn.send(command)
        except (BrokenPipeError, EOFError, OSError):
            pass

    def poll(self, timeout: float):
        conn = self._conn
        if conn is None:
            return None
        try:
            if conn.poll(timeout):
                return conn.recv()
        except (EOFError, OSError):
            pass
        if not self.is_alive() and not self._failure_reported:
            self._failure_reported = True
            code = self._process.exitcode if self._process else None
            return protocol.EngineFailed(
                f"the engine process exited (code {code}); its log: {self.config.log_path}")
        return None

    def is_alive(self) -> bool:
        return self._process is not None and self._process.is_alive()

    def restart(self) -> None:
        self.stop()
        self.start()

    def stop(self) -> None:
        if self._process is None:
            return
        self.send(protocol.Shutdown())
        self._process.join(timeout=3)
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(timeout=2)
        if self._conn is not None:
            self._conn.close()
        self._process, self._conn = None, None
