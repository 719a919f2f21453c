"""The warm switch's messages between the dashboard and a side engine process: a new config
compiled and prewarmed beside the serving one, then cut over to (probe/engine/process/warm_side.py).
Frozen and picklable, as the rest of probe/contract/protocol.py."""

from __future__ import annotations

from dataclasses import dataclass

from probe.contract.journal import EngineExit


# -- side engine -> dashboard ------------------------------------------------------------------
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


# -- dashboard -> side engine ------------------------------------------------------------------
@dataclass(frozen=True)
class CutOver:
    predecessor: EngineExit     # the serving engine has been stopped: continue its session


# -- what the engine handle tells its reader, after it cut over -------------------------------
@dataclass(frozen=True)
class CutOverDone:
    shapes: int
    seconds: float
