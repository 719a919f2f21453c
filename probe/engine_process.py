"""The engine in a process of its own, so a minute-long CPU compile (which holds the GIL) never
freezes the dashboard. The dashboard talks to it through `EngineClient`, with the frozen
messages of probe/protocol.py over a pipe."""

from __future__ import annotations

import multiprocessing as mp
import os
import stat
import sys
import threading
import time
import traceback
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from pathlib import Path

from probe import protocol
from probe.options import OptConfig, parse_opts
from probe.settings import EngineSettings
from probe.workload_setup import PreparedWorkload, prepare_workload

PUBLISH_INTERVAL_S = 0.5
KEEP_LOGS = 10
LOG_PREFIX = "engine-"


@dataclass(frozen=True)
class EngineProcessConfig:
    settings: EngineSettings
    options: OptConfig
    workload: PreparedWorkload
    trace_name: str
    speed: float | None = None      # None: measure the capacity and offer half of it
    max_requests: int | None = None
    loop: bool = True
    log_path: str = ""      # created by EngineClient.start, one per start; "": output discarded
    metrics_port: int | None = None     # serve Prometheus metrics from the engine process


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
    return EngineProcessConfig(settings, options, workload, args.trace, speed=args.speed,
                               max_requests=getattr(args, "requests", None),
                               metrics_port=getattr(args, "metrics_port", None))


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


def state_dir() -> Path:
    """infertop's per-user state folder: $XDG_STATE_HOME/infertop, else
    ~/.local/state/infertop (the XDG spec ignores a relative $XDG_STATE_HOME)."""
    base = os.environ.get("XDG_STATE_HOME", "")
    root = Path(base) if os.path.isabs(base) else Path.home() / ".local" / "state"
    return root / "infertop"


def _private_dir(path: Path) -> Path:
    """Create `path` 0o700 if needed; refuse one that is a symlink or someone else's."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        pass
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise OSError(f"{path} is not a directory")
    if info.st_uid != os.getuid():
        raise PermissionError(f"{path} belongs to another user")
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(path, 0o700)
    return path


def _prune_logs(folder: Path, keep: int) -> None:
    """Delete all but the newest `keep` engine logs (by modification time)."""
    logs = []
    for entry in os.scandir(folder):
        if entry.name.startswith(LOG_PREFIX) and entry.name.endswith(".log"):
            try:
                logs.append((entry.stat(follow_symlinks=False).st_mtime, entry.name))
            except FileNotFoundError:   # another dashboard pruned it first
                continue
    logs.sort()
    for _, name in logs[:max(len(logs) - keep, 0)]:
        try:
            os.unlink(folder / name)
        except FileNotFoundError:
            pass


def new_log(folder: Path | None = None, keep: int = KEEP_LOGS) -> str:
    """A fresh, empty engine log in the state folder; the oldest beyond `keep` go. Created
    with O_EXCL|O_NOFOLLOW: an existing name, or a symlink planted there, is never written
    through; the next name is tried instead."""
    folder = _private_dir(folder or state_dir())
    _prune_logs(folder, keep - 1)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    for attempt in range(100):
        path = folder / f"{LOG_PREFIX}{stamp}-{os.getpid()}-{attempt}.log"
        try:
            os.close(os.open(path, flags, 0o600))
        except FileExistsError:
            continue
        return str(path)
    raise FileExistsError(f"no free engine log name in {folder}")


def _redirect_output(log_path: str) -> None:
    """The child shares the dashboard's terminal: send its stdout/stderr (torch warnings,
    compiler output) to its log, or discard them when there is none; never to the screen.
    The log was created by the dashboard in a private folder; O_NOFOLLOW still refuses a
    symlink put in its place."""
    if log_path:
        fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
    else:
        fd = os.open(os.devnull, os.O_WRONLY)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def engine_main(config: EngineProcessConfig, conn: Connection) -> None:
    """The engine process: load, (prewarm), serve the replay, publish live snapshots."""
    _redirect_output(config.log_path)   # before torch/transformers print import warnings
    from probe.bandwidth_cache import machine_bandwidth
    from probe.calibration import choose_speed
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
    send(protocol.Loading("measuring this machine's memory bandwidth for the roofline (once per "
                          "machine, then cached)"))
    try:
        engine.bandwidth = machine_bandwidth(engine.device)
    except Exception as exc:  # no roofline is no reason not to serve
        engine.notify("warning", f"no roofline: bandwidth not measured ({type(exc).__name__})")
    speed = config.speed
    if speed is None:
        send(protocol.Loading("measuring what the engine serves one at a time, to replay at "
                              "half of it"))
        try:
            choice = choose_speed(engine, config.workload.trace)
        except Exception as exc:  # a failed measurement leaves the trace's own rate
            choice = None
            engine.notify("warning", f"capacity not measured ({type(exc).__name__}: {exc}); "
                                     f"replaying at the trace's rate")
        speed = choice.speed if choice else 1.0
        if choice:
            engine.notify("info", choice.text())
    replayer = OpenLoopReplayer(config.workload.trace, speed=speed, loop=config.loop,
                                max_requests=config.max_requests)
    loop = ServingLoop(engine, replayer)
    reporter = LiveReporter(loop, config.trace_name)
    exporter = None
    if config.metrics_port is not None:
        from probe.monitoring.prometheus import PrometheusExporter
        try:
            exporter = PrometheusExporter(engine.session, lambda: loop.queue_depth,
                                          port=config.metrics_port)
            engine.notify("info", f"Prometheus metrics on "
                                  f"http://127.0.0.1:{exporter.port}/metrics")
        except OSError as exc:
            engine.notify("error", f"--metrics-port {config.metrics_port}: cannot listen "
                                   f"({exc.strerror or exc}); no metrics this session")
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
    if exporter is not None:
        exporter.close()
    engine.close()


class EngineClient:
    """The dashboard's handle on the engine process (implements tui's EngineHandle)."""

    def __init__(self, config: EngineProcessConfig) -> None:
        self.config = config
        self._options = config.options
        self._process: mp.process.BaseProcess | None = None
        self._conn: Connection | None = None
        self._failure_reported = False
        self.log_path: str | None = None          # this engine start's log
        self.log_problem: str | None = None       # why there is none

    def start(self) -> None:
        try:
            self.log_path, self.log_problem = new_log(), None
        except OSError as exc:  # no log is no reason not to serve
            self.log_path, self.log_problem = None, f"no engine log: {exc}"
        context = mp.get_context("spawn")
        parent, child = context.Pipe()
        config = replace(self.config, options=self._options, log_path=self.log_path or "")
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
                f"the engine process exited (code {code}); its log: "
                f"{self.log_path or self.log_problem}")
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
