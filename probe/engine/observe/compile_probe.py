"""Compile events and graph breaks, read from PyTorch's own probes.

- `torch._dynamo.callback.callback_handler`: start/end of every (outermost) compilation with its
  compile id ("frame/attempt") — the live "compiling… 23 s" and each compile's seconds.
- the `recompiles` logging artifact: the guard failures that caused a recompile.
- the `graph_breaks` logging artifact: each break's reason and user-code location.
- `torch._dynamo.utils.get_compilation_metrics()`: the function (co_name) and failure of a compile id.
Nothing here parses stderr: the artifacts are logging records handed to our handler, and we stop
them from propagating to torch's stderr handler so a dashboard's terminal stays clean.
"""

from __future__ import annotations

import logging
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from types import FrameType

import torch
import torch._dynamo
from torch._dynamo.callback import CallbackArgs, CallbackTrigger, callback_handler

from probe.analysis.fallbacks import CUDAGRAPH_SKIPPED, degraded_event
from probe.common.clock import SessionClock
from probe.contract.records import CompileEvent, CompileInProgress, GraphBreakRecord
from probe.engine.observe.compile_stage import thread_stage

_RECOMPILES_LOGGER = "torch._dynamo.guards.__recompiles"
_GRAPH_BREAKS_LOGGER = "torch._dynamo.symbolic_convert.__graph_breaks"
_CONVERT_FRAME_LOGGER = "torch._dynamo.convert_frame"

_RECOMPILE_HEAD = re.compile(r"Recompiling function (?P<function>\S+) in (?P<where>\S+)")
_GUARD_FAILURE = re.compile(r"^\s*- (?P<entry>\d+/\d+): (?P<failure>.+?)\s*(?:#.*)?$")
_BREAK_HEAD = re.compile(r"in user code at (?P<file>.+?):(?P<line>\d+)\s*\n\s*Graph Break Reason: (?P<reason>.*)",
                         re.DOTALL)
_LIMIT_FUNCTION = re.compile(r"function: '(?P<function>[^']+)'")


def frame_being_compiled() -> str | None:
    """The function dynamo is compiling now, read off its own call stack (its `compile_inner`
    holds the code object): the start callback carries only a compile id, and dynamo records
    the name only after the compile ends — too late for a feed that shows compiles as they
    run. None when dynamo's internals no longer look like this."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "compile_inner":
            return getattr(frame.f_locals.get("code"), "co_name", None)
        frame = frame.f_back
    return None


def _metric(metrics, name: str) -> float | None:
    """A number dynamo's CompilationMetrics holds for a compile (absent: an older torch, a
    failed compile, a stage that did not run)."""
    value = getattr(metrics, name, None) if metrics is not None else None
    return float(value) if isinstance(value, (int, float)) else None


def _phases_s(metrics) -> tuple[float | None, float | None, float | None]:
    """(tracing, aot, inductor) seconds of a compile from dynamo's nested cumulative times
    (dynamo ⊇ AOTAutograd ⊇ inductor); a backend that does not run AOTAutograd or inductor
    (eager) leaves them 0. All None when dynamo did not time the compile."""
    dynamo_us = _metric(metrics, "dynamo_cumulative_compile_time_us")
    if dynamo_us is None:
        return None, None, None
    aot = (_metric(metrics, "aot_autograd_cumulative_compile_time_us") or 0.0) / 1e6
    inductor = (_metric(metrics, "inductor_cumulative_compile_time_us") or 0.0) / 1e6
    return max(0.0, dynamo_us / 1e6 - aot), max(0.0, aot - inductor), inductor


def _from_cache(metrics) -> bool | None:
    """Whether every graph of the compile came from AOTAutograd's cache (local or remote):
    then inductor did not run and the AOTAutograd time is the load. None: not known."""
    if metrics is None:
        return None
    counts = [getattr(metrics, f"aotautograd_{where}_cache_{what}_count", None)
              for where in ("local", "remote") for what in ("hit", "miss")]
    known = [c for c in counts if isinstance(c, int)]
    if len(known) != len(counts):
        return None
    local_hit, local_miss, remote_hit, remote_miss = known
    return local_hit + remote_hit > 0 and local_miss + remote_miss == 0


def _unique_graphs() -> int:
    return int(torch._dynamo.utils.counters["stats"]["unique_graphs"])


def summarize_break_reason(text: str) -> str:
    """The first line of dynamo's reason, plus the next one when the first only introduces it."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return "unknown"
    head = lines[0]
    if head.endswith(":") and len(lines) > 1 and not lines[1].startswith(("Explanation", "Hint")):
        head = f"{head} {lines[1]}"
    return head


def parse_recompile_message(message: str) -> tuple[str | None, str | None]:
    """(function, reason) from a `recompiles` record; reason joins every entry's guard failure."""
    head = _RECOMPILE_HEAD.search(message)
    failures = []
    for line in message.splitlines():
        if "User stack trace" in line:
            break
        match = _GUARD_FAILURE.match(line)
        if match:
            failures.append(f"{match['entry']}: {match['failure']}")
    # A size mismatch is the actionable failure; other entries failing on unrelated guards follow it.
    failures.sort(key=lambda failure: "mismatch" not in failure)
    return (head["function"] if head else None, "; ".join(failures) or None)


def parse_graph_break_message(message: str) -> tuple[str, str] | None:
    """(reason, file:line) from a `graph_breaks` record."""
    match = _BREAK_HEAD.search(message)
    if not match:
        return None
    reason = match["reason"].split("User code traceback:")[0]
    return summarize_break_reason(reason), f"{short_path(match['file'])}:{match['line']}"


def short_path(path: str) -> str:
    """`…/site-packages/transformers/x.py` → `transformers/x.py`: the part a reader recognises."""
    marker = "site-packages/"
    return path.split(marker, 1)[1] if marker in path else path


@dataclass
class _Pending:
    compile_id: str
    trigger: CallbackTrigger
    start: float
    request_id: str | None
    config_id: str | None
    graphs_before: int = 0
    thread_id: int | None = None    # the thread compiling, whose stack tells the stage
    graphs: int = 0
    reason: str | None = None
    function: str | None = None
    end: float | None = None


class _ArtifactHandler(logging.Handler):
    def __init__(self, probe: CompileProbe) -> None:
        super().__init__(level=logging.DEBUG)
        self._probe = probe

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._probe._on_log(record.name, record.getMessage())
        except Exception:  # a probe must never break the model it watches
            self.handleError(record)


class CompileProbe:
    """Process-wide: dynamo's callbacks and loggers are global, so install one probe at a time."""

    def __init__(self, clock: SessionClock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._request_id: str | None = None
        self._config_id: str | None = None
        self._pending: dict[str, _Pending] = {}
        self._open: _Pending | None = None
        # dynamo logs a recompile's guard failures just before it starts that compile
        self._recompile_reason: tuple[str | None, str | None] | None = None
        self._events: list[CompileEvent] = []
        self._breaks: Counter[tuple[str, str, str]] = Counter()
        self._compile_seconds = 0.0
        self._waited_s = 0.0            # finished compiles the context request waited on
        self._frame_functions: dict[str, str] = {}   # dynamo frame id → function compiled
        self._handler = _ArtifactHandler(self)
        self._installed = False
        self._thread: int | None = None     # only this thread's compiles (watch_only)

    # -- lifecycle ---------------------------------------------------------------------------
    def install(self) -> None:
        if self._installed:
            return
        callback_handler.register_start_callback(self._on_start)
        callback_handler.register_end_callback(self._on_end)
        torch._logging.set_logs(recompiles=True, graph_breaks=True)
        for name in (_RECOMPILES_LOGGER, _GRAPH_BREAKS_LOGGER, _CONVERT_FRAME_LOGGER):
            logger = logging.getLogger(name)
            logger.addHandler(self._handler)
        for name in (_RECOMPILES_LOGGER, _GRAPH_BREAKS_LOGGER):
            logging.getLogger(name).propagate = False
        # Keep every compile's metrics until we have read them (the default keeps 64).
        torch._dynamo.utils.set_compilation_metrics_limit(4096)
        self._installed = True

    def reset_dynamo(self) -> None:
        """torch._dynamo.reset(), which also clears the callback handler: register again.
        Compile ids restart at 0/0 afterwards, so events are told apart by config id."""
        torch._dynamo.reset()
        with self._lock:
            self._pending.clear()
            self._open = None
            self._frame_functions.clear()
        if self._installed:
            callback_handler.register_start_callback(self._on_start)
            callback_handler.register_end_callback(self._on_end)

    def watch_only(self, thread_id: int | None) -> None:
        """Hear only the compiles run on `thread_id` (None: every thread's). dynamo's callbacks
        and loggers are process-wide: where two engines share a process (a server's warm
        switch compiles a config beside the serving one), each hears its own thread, and the
        side compile is no serving request's compile stall."""
        with self._lock:
            self._thread = thread_id

    def _other_thread(self) -> bool:
        return self._thread is not None and threading.get_ident() != self._thread

    def uninstall(self) -> None:
        if not self._installed:
            return
        for callbacks, callback in ((callback_handler.start_callbacks, self._on_start),
                                    (callback_handler.end_callbacks, self._on_end)):
            if callback in callbacks:
                callbacks.remove(callback)
        for name in (_RECOMPILES_LOGGER, _GRAPH_BREAKS_LOGGER, _CONVERT_FRAME_LOGGER):
            logging.getLogger(name).removeHandler(self._handler)
        for name in (_RECOMPILES_LOGGER, _GRAPH_BREAKS_LOGGER):
            logger = logging.getLogger(name)    # another engine's probe still hears them
            logger.propagate = not any(isinstance(h, _ArtifactHandler) for h in logger.handlers)
        self._installed = False

    def rekey(self, mapping: Mapping[str, str | None]) -> None:
        """Another session's config ids (probe/engine/session_swap.py): the breaks counted so
        far, and the events not collected yet, under the new ids; a config mapped to None is
        dropped (a side engine's prewarm breaks are its new config's, never the eager c1's)."""
        with self._lock:
            breaks: Counter[tuple[str, str, str]] = Counter()
            for (config_id, reason, location), count in self._breaks.items():
                now = mapping.get(config_id)
                if now is not None:
                    breaks[(now, reason, location)] += count
            self._breaks = breaks
            self._events = [replace(e, config_id=mapping.get(e.config_id or ""))
                            for e in self._events if mapping.get(e.config_id or "")]
            if self._config_id is not None:
                self._config_id = mapping.get(self._config_id)

    # -- context set by the engine -----------------------------------------------------------
    def set_context(self, request_id: str | None, config_id: str | None) -> None:
        with self._lock:
            if request_id is not None and request_id != self._request_id:
                self._waited_s = 0.0
            self._request_id, self._config_id = request_id, config_id

    @property
    def compile_seconds(self) -> float:
        """Total seconds spent inside compiles so far (a request's stall is this value's growth)."""
        with self._lock:
            return self._compile_seconds

    def compiling(self) -> CompileInProgress | None:
        """The compile running now, as the dashboard shows it before dynamo reports its end."""
        with self._lock:
            pending = self._open
            if pending is None:
                return None
            frame = pending.compile_id.split("/", 1)[0]
            running = CompileInProgress(
                compile_id=pending.compile_id,
                function=pending.function or self._frame_functions.get(frame),
                request_id=pending.request_id,
                since_s=self._clock.to_session_s(pending.start),
                waited_before_s=self._waited_s if pending.request_id == self._request_id else 0.0)
        return replace(running, stage=thread_stage(pending.thread_id))   # outside the lock

    # -- callbacks (run on the thread that compiles) -------------------------------------------
    def _on_start(self, args: CallbackArgs) -> None:
        if self._other_thread():
            return
        with self._lock:
            pending = _Pending(args.compile_id, args.callback_trigger, time.perf_counter(),
                               self._request_id, self._config_id, _unique_graphs(),
                               thread_id=threading.get_ident())
            if self._recompile_reason is not None:
                pending.function, pending.reason = self._recompile_reason
                self._recompile_reason = None
            pending.function = pending.function or frame_being_compiled()
            self._pending[args.compile_id] = pending
            self._open = pending

    def _on_end(self, args: CallbackArgs) -> None:
        if self._other_thread():
            return
        with self._lock:
            pending = self._pending.get(args.compile_id) or self._open
            if pending is None:
                return
            pending.end = time.perf_counter()
            pending.graphs = _unique_graphs() - pending.graphs_before
            self._ended(pending, pending.end)

    def _ended(self, pending: _Pending, end: float) -> None:
        """A compile's seconds counted, and waited on by its request if that one still runs
        (under the lock)."""
        self._compile_seconds += end - pending.start
        if pending.request_id is not None and pending.request_id == self._request_id:
            self._waited_s += end - pending.start
        self._open = None

    def _on_log(self, logger_name: str, message: str) -> None:
        if self._other_thread():
            return
        if logger_name == _RECOMPILES_LOGGER:
            with self._lock:
                self._recompile_reason = parse_recompile_message(message)
        elif logger_name == _GRAPH_BREAKS_LOGGER:
            parsed = parse_graph_break_message(message)
            if parsed:
                with self._lock:
                    self._breaks[(self._config_id or "", *parsed)] += 1
        elif logger_name == _CONVERT_FRAME_LOGGER and "recompile_limit" in message:
            match = _LIMIT_FUNCTION.search(message)
            with self._lock:
                now = self._clock.now_s()
                self._events.append(CompileEvent(
                    compile_id="-", kind="limit",
                    function=match["function"] if match else "?", start_s=now, duration_s=0.0,
                    reason="recompile limit hit: new shapes of this function now run eager",
                    request_id=self._request_id, config_id=self._config_id))

    @contextmanager
    def external_compile(self, function: str, *, from_cache: bool,
                         reason: str | None = None) -> Iterator[None]:
        """A compile dynamo's callbacks do not report (the compile cache's aot_compile, or its
        load from disk): shown live, counted in the waiting request's stall, recorded as an
        event with `from_cache`."""
        pending = _Pending("-", CallbackTrigger.DYNAMO, time.perf_counter(), None, None,
                           thread_id=threading.get_ident(), reason=reason, function=function)
        with self._lock:
            pending.request_id, pending.config_id = self._request_id, self._config_id
            self._open = pending
        try:
            yield
        finally:
            end = time.perf_counter()
            with self._lock:
                self._ended(pending, end)
                self._events.append(CompileEvent(
                    compile_id="-", kind="recompile" if reason else "compile",
                    function=function, start_s=self._clock.to_session_s(pending.start),
                    duration_s=end - pending.start, reason=reason,
                    request_id=pending.request_id, config_id=pending.config_id, graphs=1,
                    from_cache=from_cache))

    def record_fallback(self, function: str, reason: str) -> None:
        """A compile that failed and was replaced by eager, as the engine decided."""
        with self._lock:
            self._events.append(CompileEvent(
                compile_id="-", kind="fallback", function=function, start_s=self._clock.now_s(),
                duration_s=0.0, reason=reason, request_id=self._request_id,
                config_id=self._config_id))

    # -- reading -------------------------------------------------------------------------------
    def collect(self) -> list[CompileEvent]:
        """Finished compiles turned into events (with their function names), oldest first."""
        with self._lock:
            if not self._events and all(p.end is None for p in self._pending.values()):
                return []
        try:
            functions = {str(m.compile_id): m
                         for m in torch._dynamo.utils.get_compilation_metrics()}
        except RuntimeError:  # read from the reporter thread while dynamo appended: next time
            return []
        with self._lock:
            done = [p for p in self._pending.values() if p.end is not None]
            for pending in done:
                del self._pending[pending.compile_id]
                metrics = functions.get(pending.compile_id)
                event = self._event(pending, metrics)
                self._frame_functions[pending.compile_id.split("/", 1)[0]] = event.function
                self._events.append(event)
                skipped = getattr(metrics, "cudagraph_skip_reason", None)
                if skipped:     # inductor ran this graph without CUDA graphs: said, whole
                    self._events.append(degraded_event(
                        event.start_s + (event.duration_s or 0.0), CUDAGRAPH_SKIPPED,
                        f"{event.function} ({event.compile_id}) runs without CUDA graphs: "
                        f"{skipped}", event.config_id, event.request_id))
            events, self._events = self._events, []
        return sorted(events, key=lambda e: e.start_s)

    def _event(self, pending: _Pending, metrics) -> CompileEvent:
        attempt = pending.compile_id.rsplit("/", 1)[-1].split("_")[0]
        if pending.trigger == CallbackTrigger.CUDAGRAPH_RECORDING:
            kind = "cudagraph"
        elif pending.trigger == CallbackTrigger.TRITON_AUTOTUNING:
            kind = "autotune"
        else:
            kind = "compile" if attempt in ("0", "") else "recompile"
        function = pending.function or (metrics.co_name if metrics is not None else None) or "?"
        reason = pending.reason
        if metrics is not None and metrics.fail_type:
            reason = f"{metrics.fail_type}: {metrics.fail_reason}"[:500]
        tracing_s, aot_s, inductor_s = _phases_s(metrics)
        return CompileEvent(
            compile_id=pending.compile_id, kind=kind, function=function,
            start_s=self._clock.to_session_s(pending.start),
            duration_s=(pending.end or pending.start) - pending.start, reason=reason,
            request_id=pending.request_id, config_id=pending.config_id, graphs=pending.graphs,
            guard_us=_metric(metrics, "guard_latency_us"), tracing_s=tracing_s, aot_s=aot_s, inductor_s=inductor_s,
            from_cache=_from_cache(metrics))

    def graph_breaks(self) -> list[GraphBreakRecord]:
        with self._lock:
            return [GraphBreakRecord(config_id=c, reason=r, location=loc, count=n)
                    for (c, r, loc), n in sorted(self._breaks.items())]
