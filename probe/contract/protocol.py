"""The typed contract between the dashboard and the engine process: frozen, picklable values
sent over a multiprocessing pipe. Commands go to the engine; events come back."""

from __future__ import annotations

from dataclasses import dataclass

from probe.contract.live import LiveView
from probe.contract.options import OptConfig
from probe.contract.prepared_workload import PreparedWorkload


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
    speed: float


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


Command = Workload | SetOptions | SetSpeed | Pause | Resume | ResetWindow | SaveSnapshot | Shutdown


# -- events: engine -> dashboard ---------------------------------------------------------------
@dataclass(frozen=True)
class Loading:
    text: str                   # "loading t5-small on cpu", "prewarming 4 shapes", ...


@dataclass(frozen=True)
class Live:
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
class Finished:
    pass                        # the replay ran out of requests


Event = Loading | Live | SnapshotSaved | SnapshotFailed | EngineFailed | Finished
