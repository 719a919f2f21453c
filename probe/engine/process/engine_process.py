"""The engine in a process of its own, so a minute-long CPU compile (which holds the GIL) never
freezes the dashboard. The dashboard talks to it through `EngineClient`, with the frozen
messages of probe/contract/protocol.py over a pipe. This is the dashboard's side (the launch,
the per-user state files, EngineClient); what runs in the process is
probe/engine/process/engine_child.py. Everything the engine serves is journaled
(probe/session_store/journal.py): a restart continues the session."""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
import time
from dataclasses import replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Callable

from probe.checks.engine_inputs import check_engine_inputs
from probe.checks.ports import check_port_free
from probe.common.errors import BadInput
from probe.contract import protocol
from probe.contract.options import OptConfig, parse_opts
from probe.contract.protocol import (
    JOURNAL_STOPPED,
    ArmLive,
    ArmRequest,
    ArmStart,
    ArmStarted,
    CutOver,
    Diverted,
    EndSplit,
    EngineExit,
    JournalPromise,
    KnownConfig,
    Split,
    WarmFailed,
    WarmProgress,
    WarmReady,
)
from probe.contract.records import CompileInProgress
from probe.engine.process.engine_child import engine_main
from probe.engine.process.engine_launch import EngineLaunch
from probe.engine.process.outbox import Outbox
from probe.engine.state_files import new_journal, new_log
from probe.engine.workload_setup import prepare_workload
from probe.session_store.journal_promise import journal_promise
from probe.session_store.journal_reader import save_from_journal

STOP_WAIT_S = 2.0       # after Shutdown, for the request in progress; then the engine is killed
KILL_WAIT_S = 2.0


def dashboard_threads() -> int:
    """Leave a core to the dashboard: on a small machine two OpenMP threads sharing a core with
    the UI spin against each other (t5-small eager went from 34 to 132 ms/token here)."""
    return max(1, (os.cpu_count() or 2) - 1)


def launch_from_args(args) -> EngineLaunch:
    """From the dashboard's CLI arguments; BadInput/TraceError for bad input (exit 2)."""
    check_engine_inputs(args.model, args.device, positions=getattr(args, "max_input", 512)
                        + getattr(args, "max_output", 512))
    check_port_free(getattr(args, "metrics_port", None))
    options = parse_opts(args.opt or [])
    workload = prepare_workload(args.trace, buckets=getattr(args, "buckets", None),
                                max_input=getattr(args, "max_input", 512),
                                max_output=getattr(args, "max_output", 512))
    settings = workload.engine_settings(
        model=args.model, device=args.device, max_input=getattr(args, "max_input", 512),
        threads=getattr(args, "threads", None) or dashboard_threads(),
        max_batch=getattr(args, "max_batch", 0), kv_budget_bytes=getattr(args, "kv_budget", None),
        drift_every=getattr(args, "drift_every", 8), **batch_window(args))
    return EngineLaunch(settings, options, workload, args.trace, speed=args.speed,
                        max_requests=getattr(args, "requests", None),
                        metrics_port=getattr(args, "metrics_port", None),
                        torch_trace_dir=torch_trace_dir(args),
                        slo=getattr(args, "slo", None))


def batch_window(args) -> dict:
    """--batch-window MS as the engine setting; not given: the engine's own default."""
    window = getattr(args, "batch_window", None)
    return {} if window is None else {"batch_window_ms": float(window)}


def torch_trace_dir(args) -> str:
    """`--torch-trace`: a folder beside the session's snapshots, named by the start time."""
    if not getattr(args, "torch_trace", False):
        return ""
    folder = Path(getattr(args, "snapshot_dir", None) or "snapshots")
    return str(folder / time.strftime("torch_trace-%Y%m%d-%H%M%S"))


class EngineClient:
    """The dashboard's handle on the engine process (implements
    probe.contract.protocol.EngineHandle). One session: a restart continues it from the
    session journal.

    The live A/B: the side engine is started as a warm switch's is (it compiles and prewarms
    beside the serving engine); once warm, the serving engine splits its arrivals, and the
    handle relays every other one to the side engine as it reads it, so arm B's requests wait
    on no screen and no timer. Adopting B is the warm switch's cut over; keeping A stops B and
    has A serve on, B's records taken in and what B held served."""

    def __init__(self, launch: EngineLaunch, *,
                 target: Callable[[EngineLaunch, Connection], None] = engine_main) -> None:
        if launch.workload is None:     # only the spawn arguments go without one
            raise ValueError("EngineClient: the launch has no workload to send the engine")
        self.launch = launch
        self._workload = launch.workload
        self._target = target
        self._options = launch.options
        self._speed = launch.speed
        self._process: mp.process.BaseProcess | None = None
        self._conn: Connection | None = None
        self._outbox: Outbox | None = None
        self._failure_reported = False
        self._ended: EngineExit | None = None       # how the last engine ended, once it did
        self.log_path: str | None = None          # this engine start's log
        self.log_problem: str | None = None       # why there is none
        self.journal_path: str | None = None      # this session's journal (all its engines)
        self.journal_problem: str | None = None   # why there is none
        self._journal_stopped: str | None = None  # the engine's notice that a write failed
        self._side: tuple | None = None           # a warm switch's side engine, while it warms
        self._ab = ""                   # "" none; "warming": B compiles; "split": both serve
        self._arm_id = ""               # arm B's config id, once it said

    def start(self) -> None:
        self._spawn(predecessor=None)

    def open_journal(self) -> str | None:
        """Make the session's journal now, if it has none yet (the dashboard calls this before
        it opens, so that a state folder that takes none is said at the start); returns why
        there is none. No journal is no reason not to serve: only a crash then loses what was
        served, and a restart starts afresh."""
        if self.journal_path is None and self.journal_problem is None:
            try:
                self.journal_path = new_journal()
            except OSError as exc:
                self.journal_problem = f"no session journal: {exc}"
        return self.journal_problem

    def journal_promise(self) -> JournalPromise:
        """What `s` can still save once the engine is down."""
        return journal_promise(self.journal_path, self.journal_problem, self._journal_stopped)

    def restart(self, abandoned: CompileInProgress | None = None) -> None:
        """Stop the engine if it runs, and start one that continues the session: a stop asked
        for carries the queue across (restart_carry); `abandoned`: the compile x gave up. An
        A/B ends with it: what arm B held is carried across too (dispatched, not recorded)."""
        self._ab = ""
        ended = self._ended
        self.stop()
        reason = "stopped to give up a compile" if abandoned else "stopped for a restart"
        self._spawn(ended or EngineExit(time.time(), None, reason, abandoned=abandoned))

    def _spawn(self, predecessor: EngineExit | None) -> None:
        try:
            self.log_path, self.log_problem = new_log(), None
        except OSError as exc:  # no log is no reason not to serve
            self.log_path, self.log_problem = None, f"no engine log: {exc}"
        self.open_journal()
        self._process, self._conn, self._outbox = self._launch(
            self._options, predecessor, self.log_path or "", warm_side=False)
        self._failure_reported, self._ended = False, None

    def _launch(self, options: OptConfig, predecessor: EngineExit | None, log_path: str, *,
                warm_side: bool) -> tuple[mp.process.BaseProcess, Connection, Outbox]:
        context = mp.get_context("spawn")
        parent, child = context.Pipe()
        # The spawn arguments are written into a pipe (64 KiB) before the child runs any of
        # our code; a child that never gets that far never reads them, and a larger write
        # blocked here — on "starting the engine…", deaf to ctrl+q. So they stay small, and
        # the workload (a whole trace: 100 KB to megabytes) follows through the outbox.
        arguments = replace(self.launch, workload=None, options=options, speed=self._speed,
                            log_path=log_path, journal_path=self.journal_path or "",
                            predecessor=predecessor, warm_side=warm_side)
        process = context.Process(target=self._target, args=(arguments, child),
                                  name="infertop-engine", daemon=True)
        # A running Textual app replaces sys.stdout/stderr with objects that have no file
        # descriptor, and multiprocessing hands sys.stderr.fileno() to its helper process
        # ("bad value(s) in fds_to_keep"): give it the real streams while it starts.
        streams = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        try:
            process.start()
        except BaseException:
            parent.close()
            raise
        finally:
            sys.stdout, sys.stderr = streams
            child.close()
        outbox = Outbox(parent)
        outbox.put(protocol.Workload(self._workload))
        return process, parent, outbox

    # -- the warm switch ---------------------------------------------------------------------
    def warm_switch(self, options: OptConfig) -> None:
        """Start a side engine on `options` that compiles and prewarms beside this one; its
        WarmProgress/WarmReady/WarmFailed come through `poll`. A side engine already warming
        is stopped first (the newest ask wins)."""
        self.stop_side()
        try:
            log_path = new_log()
        except OSError:
            log_path = ""
        self._side = (*self._launch(options, None, log_path, warm_side=True), options, log_path)

    def cut_over(self) -> None:
        """Stop the serving engine and make the warmed side engine serve, continuing the
        session from the journal (as a restart does)."""
        side = self._side
        if side is None:
            return
        self._side = None
        ended = self._ended
        self.stop()
        process, conn, outbox, options, log_path = side
        self._process, self._conn, self._outbox = process, conn, outbox
        self._options, self.log_path = options, log_path or None
        self._failure_reported, self._ended = False, None
        outbox.put(CutOver(ended or EngineExit(time.time(), None, "cut over to a warm config")))

    def stop_side(self) -> None:
        side, self._side = self._side, None
        if side is not None:
            _stop_process(*side[:3])

    def _side_outbox(self) -> Outbox | None:
        side = self._side
        return None if side is None else side[2]

    def _poll_side(self):
        side = self._side
        if side is None:
            return None
        process, conn = side[0], side[1]
        try:
            if conn.poll(0):
                event = conn.recv()
                if isinstance(event, ArmStarted):
                    self._arm_started(event)
                if isinstance(event, (WarmProgress, WarmReady, WarmFailed, ArmLive,
                                      ArmStarted)):
                    return event
                if isinstance(event, protocol.EngineFailed):
                    self._side_gone()
                    return WarmFailed(event.error)
                return None     # its Loading lines: the serving engine's status stays
        except (EOFError, OSError):
            pass
        if not process.is_alive():
            self._side_gone()
            return WarmFailed(f"the side engine exited (code {process.exitcode})")
        return None

    def _side_gone(self) -> None:
        """A side engine that failed: a live A/B ends as if A were kept."""
        if self._ab:
            self.ab_keep()
        else:
            self.stop_side()

    # -- the live A/B ------------------------------------------------------------------------
    def ab_running(self) -> bool:
        return bool(self._ab)

    def ab_start(self, options: OptConfig) -> None:
        self.warm_switch(options)
        self._ab, self._arm_id = "warming", ""

    def ab_split(self) -> None:
        outbox = self._side_outbox()
        if self._ab != "warming" or outbox is None:
            return
        self.send(Split())
        outbox.put(ArmStart())
        self._ab = "split"

    def ab_adopt(self) -> None:
        """Arm B serves everything: the serving engine stops, B continues the session."""
        self._ab = ""
        self.cut_over()

    def ab_keep(self) -> None:
        """Arm A serves everything: B stops (what it served is in the journal), then A takes
        B's records in and serves what B held."""
        split, arm = self._ab == "split", self._arm_id
        self._ab = ""
        self.stop_side()
        if split:
            self.send(EndSplit(arm))

    def _relay(self, request: ArmRequest) -> None:
        """A request arm A diverted, to arm B. With no B (it died) it is dropped here: A holds
        it among what it diverted and serves it when the A/B ends (EndSplit)."""
        outbox = self._side_outbox()
        if outbox is not None:
            outbox.put(request)

    def _arm_started(self, event: ArmStarted) -> None:
        self._arm_id = event.config_id
        self.send(KnownConfig(event.options, event.notes))

    def send(self, command) -> None:
        if isinstance(command, protocol.SetOptions):
            self._options = command.options
        elif isinstance(command, protocol.SetSpeed):
            self._speed = command.speed
        outbox = self._outbox
        if outbox is not None:
            outbox.put(command)

    def poll(self, timeout: float):
        side_event = self._poll_side()
        if side_event is not None:
            return side_event
        conn = self._conn
        if conn is None:
            return None
        try:
            if conn.poll(timeout):
                event = conn.recv()
                if isinstance(event, Diverted):     # arm B's, relayed at once
                    self._relay(event.request)
                    return None
                return self._seen(event)
        except (EOFError, OSError):
            pass
        if not self.is_alive() and not self._failure_reported:
            self._failure_reported = True
            code = self._process.exitcode if self._process else None
            return self._seen(protocol.EngineFailed(
                f"the engine process exited (code {code}); its log: "
                f"{self.log_path or self.log_problem}"))
        return None

    def _seen(self, event):
        """Keep what a restart needs: the speed served, and how the engine ended."""
        if isinstance(event, protocol.EngineLive):
            self._speed = event.view.replay.speed
            stopped = [n.text for n in event.view.notices if JOURNAL_STOPPED in n.text]
            if stopped and self._journal_stopped is None:
                self._journal_stopped = stopped[0]
        elif isinstance(event, protocol.EngineFailed) and self._ended is None:
            process = self._process
            code = None if process is None or process.is_alive() else process.exitcode
            self._ended = EngineExit(time.time(), code, event.error)
        return event

    def is_alive(self) -> bool:
        return self._process is not None and self._process.is_alive()

    def write_snapshot(self, path: str, *, serving: bool = False) -> Path:
        """The session JSON from the journal, with no engine: what the engine served before it
        ended (`s` while it is down), or, `serving`, what a live A/B's two engines served so
        far. BadInput when there is nothing to save."""
        if not self.journal_path:
            raise BadInput(self.journal_problem or "no session journal")
        return save_from_journal(self.journal_path, path, self._ended, serving=serving)

    def stop(self) -> None:
        self.stop_side()
        process, conn, outbox = self._process, self._conn, self._outbox
        if process is None:
            return
        self._process, self._conn, self._outbox = None, None, None
        _stop_process(process, conn, outbox)


def _stop_process(process: mp.process.BaseProcess, conn: Connection | None,
                  outbox: Outbox | None) -> None:
    """Shutdown, STOP_WAIT_S for the engine to end, then kill it: never an unbounded wait."""
    if outbox is not None:
        outbox.put(protocol.Shutdown())
    process.join(timeout=STOP_WAIT_S)
    if process.is_alive():
        process.kill()
        process.join(timeout=KILL_WAIT_S)
    # The engine is gone, so a send in progress fails at once; close the connection only
    # after the outbox let go of it (a closed descriptor's number may be reused).
    if conn is not None and (outbox is None or outbox.close(timeout=KILL_WAIT_S)):
        conn.close()
