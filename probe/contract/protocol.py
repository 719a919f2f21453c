"""How the dashboard and the engine talk, top to bottom: the handle the dashboard holds
(`EngineHandle`), the commands it sends, the events that come back, the warm switch's
messages, how an engine ended, and what the dashboard may promise about what it served.

Every message is a frozen, picklable value sent over a multiprocessing pipe. The real handle is
`probe.engine.process.engine_process.EngineClient`; `tests.fake_engine.FakeEngine` is a scripted
one for tests. Torch-free: the dashboard's process imports this module and nothing of the
engine."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from probe.contract.live import LiveView
from probe.contract.options import OptConfig
from probe.contract.prepared_workload import PreparedWorkload
from probe.contract.records import CompileInProgress
from workloads.trace_records import TraceRequest


# -- the handle: what the dashboard needs from an engine ---------------------------------------
class EngineHandle(Protocol):
    log_path: str | None                  # the running engine's log (a fresh one per start)
    log_problem: str | None               # why there is no log, when there is none
    journal_path: str | None              # the session's journal, once made
    journal_problem: str | None           # why the session has no journal, when it has none

    def start(self) -> None: ...          # spawn the engine process (returns at once)
    def send(self, command: Command) -> None: ...  # never blocks, never raises if it died
    def poll(self, timeout: float) -> Any: ...  # the next Event (or warm message), None
                                                # after timeout
    def is_alive(self) -> bool: ...
    def restart(self, abandoned: CompileInProgress | None = None) -> None: ...
    # kill if needed, start one that continues the session (`abandoned`: the compile x gave up)
    def stop(self) -> None: ...           # Shutdown, a bounded wait, then kill if needed
    # the session JSON from its journal, without an engine, or (`serving`) beside a live A/B's
    # two engines; OSError/BadInput
    def write_snapshot(self, path: str, *, serving: bool = False) -> Path: ...
    def journal_promise(self) -> JournalPromise: ...  # what `s` can save, engine down
    def open_journal(self) -> str | None: ...  # make the journal before the app opens; why not
    def warm_switch(self, options: OptConfig) -> None: ...  # a side engine on `options` warms
    def cut_over(self) -> None: ...       # stop the serving engine, the side one serves on
    def stop_side(self) -> None: ...      # give up a warm switch's side engine
    # the live A/B: a side engine on `options` warms (as a warm switch's does), then serves
    # every other arriving request beside the serving one, until adopted or dropped
    def ab_start(self, options: OptConfig) -> None: ...
    def ab_running(self) -> bool: ...     # since ab_start, until adopted, kept or failed
    def ab_split(self) -> None: ...       # the side engine is warm: split the arrivals
    def ab_adopt(self) -> None: ...       # stop the serving engine, arm B serves everything
    def ab_keep(self) -> None: ...        # stop arm B, the serving engine serves everything


# -- commands: dashboard -> engine -------------------------------------------------------------
@dataclass(frozen=True)
class Workload:
    workload: PreparedWorkload  # the first message: a whole trace is too big for the spawn
                                # arguments (see EngineClient._spawn)


@dataclass(frozen=True)
class SetOptions:
    options: OptConfig


@dataclass(frozen=True)
class SetSpeed:
    speed: float        # the rate factor: a slower clock, below ×0.125 arrivals thinned


@dataclass(frozen=True)
class Pause:
    pass


@dataclass(frozen=True)
class Resume:
    pass


@dataclass(frozen=True)
class ResetWindow:
    pass


@dataclass(frozen=True)
class SaveSnapshot:
    path: str                   # the engine writes the full session JSON here, atomically


@dataclass(frozen=True)
class Shutdown:
    pass


# -- events: engine -> dashboard ---------------------------------------------------------------
@dataclass(frozen=True)
class EngineLoading:
    text: str                   # "loading t5-small on cpu", "prewarming 4 shapes", ...


@dataclass(frozen=True)
class EngineLive:
    view: LiveView


@dataclass(frozen=True)
class SnapshotSaved:
    path: str


@dataclass(frozen=True)
class SnapshotFailed:
    path: str
    error: str


@dataclass(frozen=True)
class EngineFailed:
    error: str                  # fatal: the engine could not start or died; the UI keeps its data


@dataclass(frozen=True)
class ReplayFinished:
    pass                        # the replay ran out of requests


Event = EngineLoading | EngineLive | SnapshotSaved | SnapshotFailed | EngineFailed | ReplayFinished

# In the notice (a Live view's notices) the engine sends when a journal write fails.
JOURNAL_STOPPED = "journaling stopped"
# How often an engine (and a live A/B's arm B) sends its live view.
PUBLISH_INTERVAL_S = 0.5


# -- the warm switch: a new config compiled and prewarmed beside the serving one, then cut over
# to (probe/engine/process/warm_side.py) ----------------------------------------------------------
# side engine -> dashboard
@dataclass(frozen=True)
class WarmProgress:
    text: str                   # "prewarming 4 shapes", "loading t5-tiny on cpu"
    shapes: int = 0             # shapes it compiles (0 until known)


@dataclass(frozen=True)
class WarmReady:
    shapes: int                 # shapes compiled and warmed
    seconds: float              # the side compile's wall time


@dataclass(frozen=True)
class WarmFailed:
    error: str                  # the side engine could not warm up; the serving one goes on


# dashboard -> side engine
@dataclass(frozen=True)
class CutOver:
    predecessor: EngineExit     # the serving engine has been stopped: continue its session


# what the engine handle tells its reader, after it cut over
@dataclass(frozen=True)
class CutOverDone:
    shapes: int
    seconds: float


# -- the live A/B: the serving engine (arm A) and a warmed side engine on the change (arm B)
# serve alternate arrivals of the one trace (probe/engine/process/ab_split.py, ab_arm.py) ----
# dashboard -> serving engine
@dataclass(frozen=True)
class Split:
    pass                        # from the next arrival on, every other one goes to arm B


@dataclass(frozen=True)
class KnownConfig:
    options: OptConfig          # arm B's config, registered here too: one sequence of ids
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class EndSplit:
    arm_config_id: str          # arm B has stopped: serve every arrival again, take in B's
                                # records from the journal, serve what B left unserved


# dashboard -> side engine
@dataclass(frozen=True)
class ArmStart:
    pass                        # serve the arrivals relayed to you, into the session journal


@dataclass(frozen=True)
class ArmRequest:
    seq: int
    request: TraceRequest
    arrival_s: float            # when it was due, in session seconds (perf_counter values
                                # mean nothing in another process: see EngineExit)


# serving engine -> its handle, which relays it to arm B (never shown)
@dataclass(frozen=True)
class Diverted:
    request: ArmRequest


# side engine -> dashboard
@dataclass(frozen=True)
class ArmStarted:
    config_id: str
    options: OptConfig
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ArmLive:
    view: LiveView              # arm B's live view (arm A's comes as EngineLive)


# what the dashboard sends an engine (the A/B's commands included)
Command = (Workload | SetOptions | SetSpeed | Pause | Resume | ResetWindow | SaveSnapshot
           | Shutdown | Split | KnownConfig | EndSplit)


# -- how an engine ended, and what the dashboard may then promise ------------------------------
@dataclass(frozen=True)
class EngineExit:
    """How an engine of this session ended: when (wall clock: a session clock is read through
    time.perf_counter, whose values mean nothing in another process), its exit code when it
    died, and what the dashboard was told."""
    at_unix: float
    exit_code: int | None
    reason: str
    # the compile given up with `x` (its own event: counted in no config's compiles)
    abandoned: CompileInProgress | None = None

    @property
    def carries_queue(self) -> bool:
        """A stop the dashboard asked for (x, a restart, a cut over), not a death: the next
        engine serves the requests this one held, instead of recording them lost."""
        return self.exit_code is None

    def said(self) -> str:
        if self.exit_code is not None:
            return f"died (exit code {self.exit_code})"
        return f"stopped ({self.reason})"


@dataclass(frozen=True)
class JournalPromise:
    """What `s` can save once the engine has stopped (read from the session's journal by
    probe/session_store/journal_promise.py). `kept`: everything served; otherwise `why` not,
    and `partial`: it can still write what the journal holds."""
    kept: bool
    why: str = ""
    partial: bool = False

    def after_crash(self) -> str:
        """The second half of the toast shown when the engine stops."""
        if self.kept:
            return ("Everything served is kept: s saves it, R restarts the engine and continues "
                    "the session.")
        if self.partial:
            return (f"Its journal stopped early ({self.why}): s saves what it holds, not what "
                    f"came after; R restarts the engine.")
        return (f"What it served cannot be saved ({self.why}); R restarts the engine "
                f"(a new session).")
