"""One request's life on the session clock, cut into the phases the engine's records mark, and
the compile seconds laid over it: the pieces the doctor's attribution adds up.

A served request's latency is arrival → end. The engine marks, in order:
  arrival_s ≤ start_s (queue_ms ends) ≤ encoder done (start_s + encoder_ms)
            ≤ its own last token (last_token_s) ≤ end_s (latency_ms ends)
so latency = wait + encode + decode + row wait, exactly (probe/engine/engine.py make_record).
A compile blocks the one engine thread, so every request in the system waits on it: the time a
compile runs inside any phase of a request is compile time of that request, whoever triggered
it (compile_stall_ms counts only the compiles inside the request's own service).
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass
from operator import attrgetter
from typing import Iterable, Sequence

from probe.contract.records import CompileEvent, RequestRecord


@dataclass(frozen=True)
class Span:
    start_s: float
    end_s: float

    @property
    def seconds(self) -> float:
        return max(self.end_s - self.start_s, 0.0)


@dataclass(frozen=True)
class CompileSpan:
    """The part of one compile event no earlier event already covers (so spans are disjoint)."""
    start_s: float
    end_s: float
    event: CompileEvent
    sub_kind: str


@dataclass(frozen=True)
class Phases:
    """A request's latency cut at its marks (each clamped into arrival..end, in order)."""
    wait: Span          # arrival → start: the queue, a batch window, KV blocks
    encode: Span        # start → encoder done
    decode: Span        # encoder done → its own last token
    row_wait: Span      # its last token → the batch's end (returned when its longest row is)


def phases(record: RequestRecord) -> Phases:
    arrival, end = record.arrival_s, max(record.end_s, record.arrival_s)

    def clamp(t: float, low: float) -> float:
        return min(max(t, low), end)

    start = clamp(record.start_s, arrival)
    encoded = clamp(record.start_s + record.encoder_ms / 1e3, start)
    last = clamp(record.last_token_s if record.last_token_s is not None else end, encoded)
    return Phases(Span(arrival, start), Span(start, encoded), Span(encoded, last), Span(last, end))


FIRST_COMPILE, RECOMPILE, FALLBACK, LIMIT = ("first compile", "recompile", "eager fallback",
                                             "recompile limit")
SUB_KINDS = (FIRST_COMPILE, RECOMPILE, FALLBACK, LIMIT)
FALLBACK_GAP_S = 1.0        # a fallback is recorded right after the compile that failed
_END = attrgetter("end_s")  # a CompileSpan's end: compile_spans' order, for bisect


def failed_compiles(events: Sequence[CompileEvent]) -> frozenset[CompileEvent]:
    """The compiles that failed into an eager fallback: the latest one of its config to end
    before each fallback marker (recorded right after it, within FALLBACK_GAP_S)."""
    failed = set()
    for marker in (e for e in events if e.kind == "fallback"):
        before = [e for e in events if e.kind not in ("fallback", "limit")
                  and e.config_id == marker.config_id
                  and 0 <= marker.start_s - _end_s(e) + 1e-6 <= FALLBACK_GAP_S]
        if before:
            failed.add(max(before, key=_end_s))
    return frozenset(failed)


def _end_s(event: CompileEvent) -> float:
    return event.start_s + (event.duration_s or 0.0)


def sub_kind(event: CompileEvent, failed: frozenset[CompileEvent] = frozenset()) -> str:
    """first compile / recompile (a new shape failed a guard) / eager fallback (a compile that
    failed, the engine then served eager) / recompile limit (dynamo gave up on new shapes)."""
    if event.kind == "fallback" or event in failed:
        return FALLBACK
    kinds = {"compile": FIRST_COMPILE, "recompile": RECOMPILE, "limit": LIMIT}
    return kinds.get(event.kind, event.kind)


def compile_spans(events: Iterable[CompileEvent]) -> tuple[CompileSpan, ...]:
    """Every compile's running time, disjoint and in time order (a compile that overlaps an
    earlier one keeps only its uncovered part); markers (fallback, limit) take no time."""
    events = tuple(events)
    failed = failed_compiles(events)
    timed = sorted((e for e in events if (e.duration_s or 0.0) > 0), key=lambda e: e.start_s)
    spans: list[CompileSpan] = []
    covered = float("-inf")
    for event in timed:
        start, end = max(event.start_s, covered), event.start_s + (event.duration_s or 0.0)
        if end > start:
            spans.append(CompileSpan(start, end, event, sub_kind(event, failed)))
            covered = end
    return tuple(spans)


def overlap_s(span: Span, spans: Sequence[CompileSpan]) -> dict[str, float]:
    """Seconds of `span` inside compiles, by sub-kind. `spans` as compile_spans gives them
    (disjoint, in time order), so only those from the first ending after the span's start on
    are read."""
    by_kind: dict[str, float] = {}
    for i in range(bisect.bisect_right(spans, span.start_s, key=_END), len(spans)):
        c = spans[i]
        if c.start_s >= span.end_s:
            break
        seconds = min(span.end_s, c.end_s) - max(span.start_s, c.start_s)
        if seconds > 0:
            by_kind[c.sub_kind] = by_kind.get(c.sub_kind, 0.0) + seconds
    return by_kind


def waited_on(record: RequestRecord, spans: Sequence[CompileSpan],
              markers: Sequence[CompileEvent]) -> tuple[CompileEvent, ...]:
    """The compile events that ran while the request was in the system, and the markers
    (fallback, limit) set down in that time."""
    arrival, end = record.arrival_s, record.end_s
    first = bisect.bisect_right(spans, arrival, key=_END)
    timed = [c.event for c in itertools.takewhile(lambda c: c.start_s < end, spans[first:])]
    marked = [e for e in markers if arrival <= e.start_s <= end]
    return tuple(dict.fromkeys(timed + marked))


def gather_start_s(batch_start_s: float, first_arrival_s: float,
                   earlier_ends_s: Sequence[float]) -> float:
    """When dynamic batching began gathering a batch: its first member's arrival, or the end of
    the batch served before it when that came later (the loop takes the next request then)."""
    before = [t for t in earlier_ends_s if t <= batch_start_s + 1e-9]
    return min(max([first_arrival_s, *before]), batch_start_s)
