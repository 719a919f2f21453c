"""`infertop` with no command: the live dashboard over an engine process, or `--load` a saved
session read-only. Bad input raises BadInput/TraceError, which the CLI turns into exit 2."""

from __future__ import annotations

import argparse
from pathlib import Path

from probe.analysis.live_figures import (
    WINDOW_SIZE,
    build_live,
    capacity_rps,
    offered_rps,
    overloaded,
)
from probe.common.errors import BadInput
from probe.common.terminal_text import terminal_text
from probe.contract.live import LiveView, ReplayStatus
from probe.contract.options import OptConfig
from probe.contract.session import SessionData
from probe.engine.process.engine_process import EngineClient, launch_from_args
from probe.engine.process.local_link import LocalLink
from probe.session_store.snapshot import (
    read_document,
    saved_live_parts,
    saved_serving,
    saved_session,
)
from tui.snapshot_files import snapshot_folder_problem
from tui.terminal_size import adopt_terminal_size
from tui.trace_shape import trace_shape

READER_STOP_WAIT_S = 3.0


def launch(args: argparse.Namespace) -> int:
    snapshot_dir = Path(getattr(args, "snapshot_dir", None) or "snapshots")
    check_snapshot_dir(snapshot_dir, args)
    if getattr(args, "load", None):
        return _open_saved(Path(args.load), snapshot_dir)
    return _run_live(args, snapshot_dir)


def check_snapshot_dir(snapshot_dir: Path, args: argparse.Namespace) -> None:
    """`--snapshot-dir` refused at the start with the words `s` would use much later."""

    inputs = [getattr(args, name, None) for name in ("trace", "model", "load")]
    problem = snapshot_folder_problem(snapshot_dir, [i for i in inputs if i])
    if problem is not None:
        raise BadInput(problem)


def _run_live(args: argparse.Namespace, snapshot_dir: Path) -> int:

    engine_launch = launch_from_args(args)  # validates every input before Textual is imported
    from tui.app import InfertopApp
    engine = EngineClient(engine_launch)
    engine.open_journal()               # a state folder that takes none is said at the start
    link = LocalLink(engine, source=trace_shape(engine_launch.workload))
    app = InfertopApp(link, options=engine_launch.options, snapshot_dir=snapshot_dir,
                      speed=engine_launch.speed)
    adopt_terminal_size()
    try:
        app.run()
    finally:
        # The reader thread polls the engine; let it finish before the pipe closes.
        app.reader_stopped.wait(READER_STOP_WAIT_S)
        link.close()
    return app.return_code or 0


def _open_saved(path: Path, snapshot_dir: Path) -> int:
    app = saved_session_app(path, snapshot_dir)
    adopt_terminal_size()
    app.run()
    return app.return_code or 0


def saved_session_app(path: Path, snapshot_dir: Path):
    """The read-only dashboard over a saved session, every string from the file (and its
    path) terminal-safe."""
    from tui.app import InfertopApp

    view = saved_view(path)
    return InfertopApp(None, initial=view, options=view.options,
                       snapshot_dir=snapshot_dir, speed=view.replay.speed, read_only=True,
                       source=terminal_text(path))


def saved_view(path: Path) -> LiveView:
    """A saved session as the dashboard shows it: the last config served is "now"."""

    document = read_document(path)
    try:
        data = saved_session(document, f"snapshot {path}", for_terminal=True)
        return _live_from(document, data, saved_as=terminal_text(path.name))
    except BadInput:
        raise
    except (TypeError, KeyError, ValueError, AttributeError) as exc:
        raise BadInput(f"snapshot {path}: not an infertop session "
                          f"({type(exc).__name__}: {exc})") from None


def saved_replay_state(document: dict) -> dict:
    """The replay's speed, queue and dispatched count when the session was saved ({} when the
    file does not say: a headless replay or a journal's snapshot)."""
    live = document.get("live")
    replay = live.get("replay") if isinstance(live, dict) else None
    return replay if isinstance(replay, dict) else {}


def _live_from(document: dict, data: SessionData, saved_as: str | None = None) -> LiveView:
    records = data.records
    config_id = data.current_config(saved_serving(document)) or "c1"
    entry = data.configs.get(config_id)
    options = entry.options if entry is not None else OptConfig()
    ok = sum(r.ok for r in records)
    model, environment = _section(document, "model"), _section(document, "environment")
    trace, settings = _section(document, "trace"), _section(document, "settings")
    device_sample, roofline = saved_live_parts(document, for_terminal=True)
    end_s = max((r.end_s for r in records), default=0.0)
    window = records[-WINDOW_SIZE:]
    offered, capacity = offered_rps([r.arrival_s for r in records], end_s), capacity_rps(window)
    # the speed and queue when it was saved (a snapshot the dashboard's `s` wrote keeps them);
    # else the requests that had arrived and were not finished yet
    saved_replay = saved_replay_state(document)
    saved_offered = saved_replay.get("offered_rps")     # the live panel's, when it was saved
    if isinstance(saved_offered, (int, float)) and not isinstance(saved_offered, bool) \
            and saved_offered > 0:
        offered = float(saved_offered)
    queued = saved_replay.get("queue_depth")
    if not isinstance(queued, int) or queued < 0:
        queued = sum(1 for r in records if r.arrival_s <= end_s < r.end_s)
    speed = saved_replay.get("speed")
    if not isinstance(speed, (int, float)) or isinstance(speed, bool) or speed <= 0:
        speed = 1.0
    dispatched = saved_replay.get("dispatched")
    if not isinstance(dispatched, int) or dispatched < len(records):
        dispatched = len(records)
    replay = ReplayStatus(
        trace=terminal_text(trace.get("name", "?")), running=False, paused=False,
        speed=float(speed), dispatched=dispatched, completed=ok, failed=len(records) - ok,
        total=len(records),
        queue_depth=queued, offered_rps=offered, capacity_rps=capacity,
        overloaded=overloaded(offered, capacity, queued))
    return build_live(
        data, t_s=end_s,
        model=terminal_text(model.get("name", "?")),
        device=terminal_text(environment.get("device", "?")),
        options=options, config_id=config_id, window_start_seq=0, compiling_since_s=None,
        compiling_request=None, device_sample=device_sample, replay=replay,
        bucket_edges=tuple(int(e) for e in settings.get("bucket_edges", ()) or ()),
        read_only=True, max_batch=int(settings.get("max_batch", 1) or 1), roofline=roofline,
        window_size=WINDOW_SIZE, saved=saved_as)


def _section(document: dict, name: str) -> dict:
    value = document.get(name)
    return value if isinstance(value, dict) else {}
