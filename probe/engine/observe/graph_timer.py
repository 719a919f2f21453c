"""Times every call of the callables the switchboard hands out, into the engine's LedgerBook
(probe/analysis/compile_ledger.py), keyed by the function and its tensor arguments' shapes
and dtypes: the key that selects which of dynamo's graphs runs.

Eager callables are timed too (compile=off): a compiled graph's pay-back is its saving over the
same function and key served eager, and no other measure of that exists. What it costs per
call: one signature tuple, two perf_counter reads and a dict update under a lock, a few µs
against a step of a millisecond or more (a CUDA call adds two events).

On a CPU a call's time is perf_counter around it: the call returns when its work is done. On
CUDA it is a pair of CUDA events recorded around the call and read when the engine flushes its
probes (`settle`), never a synchronize per call. A call during which a compile ran is timed on
the host, its compile seconds taken out (the GPU sat idle while the host compiled).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Collection, Mapping

import torch

from probe.analysis.compile_ledger import CompileWindow, GraphId, LedgerBook
from probe.common.clock import SessionClock
from probe.engine.observe.compile_probe import CompileProbe

DTYPE_NAMES = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16",
               torch.int64: "int64", torch.int32: "int32", torch.bool: "bool"}
Signature = tuple[tuple[torch.Size, torch.dtype], ...]


def signature(args: tuple, kwargs: dict) -> Signature:
    """The shapes and dtypes of the tensor arguments, positional then keyword, in order."""
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    tensors += [v for v in kwargs.values() if isinstance(v, torch.Tensor)]
    return tuple((t.shape, t.dtype) for t in tensors)


def key_text(sig: Signature) -> str:
    """"(1, 1) int64 · (1, 69, 64) fp32": what the ledger and `snapshot show` print."""
    return " · ".join(f"{tuple(shape)} {DTYPE_NAMES.get(dtype, str(dtype).replace('torch.', ''))}"
                      for shape, dtype in sig) or "no tensors"


class GraphTimer:
    def __init__(self, book: LedgerBook, clock: SessionClock, probe: CompileProbe | None,
                 device: torch.device) -> None:
        self.book = book
        self._clock = clock
        self._probe = probe
        self._cuda = device.type == "cuda"
        self._config_id: str | None = None
        self._requests: Collection[str] = ()
        self._serving = False
        self._keys: dict[Signature, str] = {}
        self._lock = threading.Lock()
        self._pending: list[tuple[GraphId, Any, Any]] = []      # CUDA event pairs not yet read

    def set_context(self, config_id: str | None, requests: Collection[str] = (), *,
                    serving: bool = True) -> None:
        """Whose calls come next: a config and the requests served (serving=False: a
        rehearsal, whose compiles count but whose calls do not). None: calls not recorded
        (the drift reference). `requests` may be a live view (continuous batching's running
        ids): it is read only when a compile ran, so a step need not copy it."""
        self._config_id, self._requests, self._serving = config_id, requests, serving

    def wrap(self, name: str, fn: Callable, *, compiled: bool) -> Callable:
        def timed(*args, **kwargs):
            config_id = self._config_id
            # a CUDA graph being captured (slot_graphs) must not record timing events into
            # itself: the capture is not a call, its replays are
            if config_id is None or (self._cuda and torch.cuda.is_current_stream_capturing()):
                return fn(*args, **kwargs)
            sig = signature(args, kwargs)
            compile_before = self._probe.compile_seconds if compiled and self._probe else 0.0
            events = None
            if self._cuda:
                events = (torch.cuda.Event(enable_timing=True),
                          torch.cuda.Event(enable_timing=True))
                events[0].record()
            start = time.perf_counter()
            out = fn(*args, **kwargs)
            end = time.perf_counter()
            if events is not None:
                events[1].record()
            key = self._keys.get(sig) or self._keys.setdefault(sig, key_text(sig))
            graph = (config_id, name, key)
            compiled_s = (self._probe.compile_seconds - compile_before
                          if compiled and self._probe else 0.0)
            window = None
            if compiled_s > 0:
                window = CompileWindow(self._clock.to_session_s(start), self._clock.to_session_s(end),
                                 tuple(self._requests) if self._serving else ())
            if not self._serving:
                self.book.add_call(graph, None, compiled_window=window)
            elif events is None or window is not None:
                ms = max(0.0, (end - start - compiled_s) * 1e3)
                self.book.add_call(graph, ms, compiled_window=window)
            else:
                with self._lock:
                    self._pending.append((graph, *events))
            return out
        timed.__wrapped__ = fn      # type: ignore[attr-defined]
        return timed

    def rekey(self, mapping: Mapping[str, str | None]) -> None:
        """CUDA event pairs not yet read, under another session's config ids (as the book)."""
        with self._lock:
            self._pending = [((mapping[graph[0]], *graph[1:]), *events)
                             for graph, *events in self._pending
                             if mapping.get(graph[0]) is not None]

    def settle(self) -> None:
        """Read the CUDA event pairs whose end has passed on the device (the rest wait)."""
        with self._lock:
            pending, self._pending = self._pending, []
        waiting = []
        for graph, begin, end in pending:
            if end.query():
                self.book.add_call(graph, begin.elapsed_time(end))
            else:
                waiting.append((graph, begin, end))
        if waiting:
            with self._lock:
                self._pending[:0] = waiting
