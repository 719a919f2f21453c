"""The dashboard's one way to an engine: what it may ask (`Ask`), what it hears (`Heard`), and
nothing about pipes, processes or sockets. The dashboard holds an `EngineLink` and does not
know which transport is under it:

- `probe.engine.process.local_link.LocalLink`: a replay's engine in child processes of the
  dashboard (the warm switch's side engine and a live A/B's arm B beside it);
- `probe.server.attach.link.ServerLink`: a running `infertop serve`, over its HTTP API.

Every value here is frozen and plain (no callables): a link may pickle it or send it as JSON.
Torch-free."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from probe.contract.options import OptConfig
from probe.contract.protocol import (
    ArmLive,
    ArmStarted,
    CutOverDone,
    EngineFailed,
    EngineLive,
    EngineLoading,
    Pause,
    ReplayFinished,
    ResetWindow,
    Resume,
    SaveSnapshot,
    SetOptions,
    SetSpeed,
    SnapshotFailed,
    SnapshotSaved,
    WarmFailed,
    WarmProgress,
)
from probe.contract.records import CompileInProgress


# -- what the dashboard may ask -------------------------------------------------------------
@dataclass(frozen=True)
class WarmSwitch:
    options: OptConfig          # compile and prewarm beside the serving config, then cut over


@dataclass(frozen=True)
class StopSide:
    pass                        # give up the warm switch (or A/B arm B) under way


@dataclass(frozen=True)
class GiveUp:
    compiling: CompileInProgress    # the compile `x` gives up: restart on `options`
    options: OptConfig


@dataclass(frozen=True)
class Restart:
    pass                        # the engine died: start one that continues the session


@dataclass(frozen=True)
class ABStart:
    options: OptConfig          # arm B warms beside the serving config, then takes every
                                # other arrival


@dataclass(frozen=True)
class ABEnd:
    adopt: bool                 # True: arm B serves everything; False: arm A does


@dataclass(frozen=True)
class Steer:
    pass                        # a watching dashboard asks to steer (granted once nobody does)


# the replay's commands (SetOptions, SetSpeed, Pause, Resume, ResetWindow, SaveSnapshot: the
# session so far, written atomically; with an engine down or an A/B running, from the journal)
# and these
Ask = (SetOptions | SetSpeed | Pause | Resume | ResetWindow | SaveSnapshot | WarmSwitch | StopSide | GiveUp
       | Restart | ABStart | ABEnd | Steer)


# -- what it hears, besides the engine's own events (EngineLive, EngineLoading, EngineFailed,
# SnapshotSaved, SnapshotFailed, ReplayFinished) and the warm switch's (WarmProgress,
# WarmFailed, CutOverDone) and the A/B's (ArmStarted, ArmLive) ------------------------------
@dataclass(frozen=True)
class Restarted:
    pass                        # a new engine continues the session (after Restart, GiveUp)


@dataclass(frozen=True)
class ABSplit:
    shapes: int                 # arm B is warm: from now on it serves every other arrival
    seconds: float


@dataclass(frozen=True)
class ABEnded:
    how: str                    # "adopt" | "keep" | "failed"
    error: str = ""             # with "failed": why arm B stopped


@dataclass(frozen=True)
class Role:
    steering: bool              # False: another dashboard steers; this one watches
    text: str                   # said to the user: who steers, how to take over


Heard = (EngineLoading | EngineLive | EngineFailed | SnapshotSaved | SnapshotFailed
         | ReplayFinished | Restarted | WarmProgress | WarmFailed | CutOverDone | ArmStarted
         | ArmLive | ABSplit | ABEnded | Role)


@dataclass(frozen=True)
class LinkFacts:
    """What the dashboard shows about the link before the first event."""
    source: str                 # "replay of azure_conv (2,000 requests)", "server 127.0.0.1:8000"
    log: str                    # "engine log: PATH", or why there is none
    journal_problem: str | None = None  # why what is served cannot be saved after a crash
    after_crash: str = ""       # what `s` and `R` can still do once the engine has died
    continues: bool = True      # a restart continues the session (a journal holds it)
    remote: bool = False        # a server: `q` leaves it serving; no restart from here


class EngineLink(Protocol):
    def open(self) -> None: ...                     # start or connect; returns at once
    def send(self, ask: Ask) -> None: ...           # never blocks, never raises
    def poll(self, timeout: float) -> Heard | None: ...  # the next event, None after timeout
    def facts(self) -> LinkFacts: ...
    def close(self) -> None: ...                    # a bounded wait; the server serves on


__all__ = ["ABEnd", "ABEnded", "ABSplit", "ABStart", "Ask", "CutOverDone", "EngineLink",
           "GiveUp", "Heard", "LinkFacts", "Pause", "ResetWindow", "Restart", "Restarted",
           "Resume", "Role", "SaveSnapshot", "SetOptions", "SetSpeed", "Steer", "StopSide", "WarmSwitch",
           "ArmLive", "ArmStarted", "EngineFailed", "EngineLive", "EngineLoading",
           "ReplayFinished", "SnapshotFailed", "SnapshotSaved", "WarmFailed", "WarmProgress"]
