"""Only infertop speaks on the terminal. A headless command (`replay`, `bench`) serves in its own
process, so what torch and its friends print would land between infertop's progress lines:
dynamo's graph-break and recompile-limit warnings (torch's own log handlers, which write to
whatever `sys.stderr` is when they emit), Python warnings (`warnings.warn`), torchao's "Failed to
load …_C_mxfp8….so" (the `torchao` logger, with no handler of its own, so logging's last
resort), transformers' logger, Ray's (`bench --ray`, `tune --ray`: its "Token authentication is
enabled" warning at `ray.init`, through a handler of Ray's own on the `ray` logger), and
whatever C++ or a child process writes to file descriptor 2.
Inside `third_party_output_to(log_path)` all of it goes to the engine log instead; `sys.stderr`
(infertop's own lines) still reaches the terminal. The dashboard's engine process needs none of
this: its descriptors 1 and 2 are the log already (engine_child._redirect_output)."""

from __future__ import annotations

import io
import logging
import os
import sys
import warnings
from contextlib import ExitStack, contextmanager
from typing import Iterator, TextIO

from probe.common.terminal_stream import TerminalStream
from probe.engine.state_files import new_log_or_temporary

# Loggers that have no handler of their own (their records would reach logging's last resort,
# stderr) or whose handler holds the stderr of the moment they were made.
# `probe`: infertop's own records (a chart's "Glyph 27 missing from font"), for the log too.
_PLAIN_LOGGERS = ("torchao", "transformers", "huggingface_hub", "accelerate", "probe")
# Loggers whose library gives them a handler of its own on a stream (Ray's holds the stderr of
# the moment `import ray` ran): their handlers are set aside for the duration. The commands
# import Ray before the context starts (require_ray, with the bad-input checks).
_OWN_HANDLER_LOGGERS = ("ray",)


@contextmanager
def third_party_output_to(log_path: str) -> Iterator[TextIO]:
    """Route every third-party message to `log_path` (appended) for the duration; yields the
    log stream. Everything is put back on exit, descriptor 2 included."""
    stderr = sys.stderr
    with open(log_path, "a", buffering=1, encoding="utf-8", errors="replace") as log, \
            ExitStack() as undo:
        undo.enter_context(_descriptor_2_to(log))
        undo.enter_context(_warnings_to(log))
        undo.enter_context(_loggers_to(log))
        undo.enter_context(_torch_logs_to(log, stderr))
        yield log


@contextmanager
def third_party_output_to_engine_log() -> Iterator[TextIO]:
    """`third_party_output_to` a fresh engine log in the per-user state folder, where the
    dashboard's engine logs are (kept and pruned the same way)."""
    with third_party_output_to(new_log_or_temporary()) as log:
        yield log


@contextmanager
def _descriptor_2_to(log: TextIO) -> Iterator[None]:
    """C++ and child processes write to descriptor 2 itself: point it at the log, and give
    `sys.stderr`, when it is the terminal's, a stream of its own on the terminal (a test's or
    the dashboard's replacement stream is left as it is)."""
    sys.stderr.flush()
    terminal_fd = os.dup(2)
    os.dup2(log.fileno(), 2)
    previous = sys.stderr
    own: TextIO | None = None
    underneath = previous.wrapped if isinstance(previous, TerminalStream) else previous
    if underneath is sys.__stderr__ and underneath is not None:
        own = io.TextIOWrapper(io.FileIO(os.dup(terminal_fd), "w"), encoding=underneath.encoding,
                               errors="backslashreplace", line_buffering=True)
        # still escaped, when the command's stderr was
        sys.stderr = TerminalStream(own) if previous is not underneath else own
    try:
        yield
    finally:
        sys.stderr.flush()
        sys.stderr = previous
        if own is not None:
            own.close()
        os.dup2(terminal_fd, 2)
        os.close(terminal_fd)


@contextmanager
def _warnings_to(log: TextIO) -> Iterator[None]:
    previous = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        log.write(warnings.formatwarning(message, category, filename, lineno, line))

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = previous


def _log_handler(log: TextIO) -> logging.Handler:
    handler = logging.StreamHandler(log)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    return handler


@contextmanager
def _loggers_to(log: TextIO) -> Iterator[None]:
    """The plain loggers write to the log and stop there (no last resort, no root); those with
    handlers of their own write only to the log while it lasts."""
    handler = _log_handler(log)
    loggers = [logging.getLogger(name) for name in (*_PLAIN_LOGGERS, *_OWN_HANDLER_LOGGERS)]
    propagate = [logger.propagate for logger in loggers]
    own = {name: logging.getLogger(name).handlers[:] for name in _OWN_HANDLER_LOGGERS}
    for name, handlers in own.items():
        for previous in handlers:
            logging.getLogger(name).removeHandler(previous)
    for logger in loggers:
        logger.addHandler(handler)
        logger.propagate = False
    hidden = _hide_transformers_default_handler()
    try:
        yield
    finally:
        for logger, was in zip(loggers, propagate):
            logger.removeHandler(handler)
            logger.propagate = was
        for name, handlers in own.items():
            for previous in handlers:
                logging.getLogger(name).addHandler(previous)
        if hidden is not None:
            hidden.enable_default_handler()


def _hide_transformers_default_handler():
    """transformers gives its root logger a handler on the stderr of the moment it is made
    (which would be the terminal's here): off for the duration; its records reach the log
    through the `transformers` logger's handler above."""
    try:
        import transformers.utils.logging as module
    except ImportError:
        return None
    module.disable_default_handler()
    return module


@contextmanager
def _torch_logs_to(log: TextIO, stderr: TextIO) -> Iterator[None]:
    """torch's registered loggers (torch, torch._dynamo, torch._inductor, …) each carry a handler
    of torch's own, and `torch._logging.set_logs` makes new ones (the compile probe calls it
    inside this context, when `sys.stderr` is the terminal's own stream)."""
    try:
        from torch._logging import _internal
    except ImportError:
        yield
        return
    handler_class = getattr(_internal, "_StderrHandler", None)
    if handler_class is not None and isinstance(handler_class.__dict__.get("stream"), property):
        context = _stderr_handlers_to(handler_class, log)
    else:
        context = _new_stream_handlers_to(_internal, log, stderr)
    with context:
        yield


@contextmanager
def _stderr_handlers_to(handler_class: type, log: TextIO) -> Iterator[None]:
    """torch ≥ 2.14: each handler writes to `sys.stderr` at each record through the class's
    `stream` property: pointed at the log, it holds for every such handler, made before or
    after."""
    previous = handler_class.__dict__["stream"]
    handler_class.stream = property(lambda self: log)   # type: ignore[attr-defined]
    try:
        yield
    finally:
        handler_class.stream = previous                  # type: ignore[attr-defined]


@contextmanager
def _new_stream_handlers_to(internal, log: TextIO, stderr: TextIO) -> Iterator[None]:
    """torch 2.13: plain `logging.StreamHandler`s, each holding the `sys.stderr` of the moment
    it was made. Those torch made already are pointed at the log for the duration, and so are
    those it makes inside (each passes through `_track_handler`); on the way out each gets its
    stream back, a new one `stderr` (the `sys.stderr` from before the context)."""
    track = getattr(internal, "_track_handler", None)
    tracked = getattr(internal, "handlers", None)
    if track is None or tracked is None:
        yield
        return
    # Not a FileHandler torch was asked for. The stream is set, not `setStream`, which would
    # flush the old one first: a stream torch's handler holds may be closed by now.
    previous = {handler: handler.stream for handler in list(tracked)
                if type(handler) is logging.StreamHandler}
    for handler in previous:
        handler.stream = log

    def track_to_log(handler: logging.Handler) -> logging.Handler:
        if type(handler) is logging.StreamHandler:
            previous[handler] = stderr
            handler.stream = log
        return track(handler)

    internal._track_handler = track_to_log
    try:
        yield
    finally:
        internal._track_handler = track
        for handler, stream in previous.items():
            handler.stream = stream
