"""The ranges a saved record's figures must lie in, checked the same way by every reader of
a session (`snapshot show|compare|export`, `doctor`, `--load`, `snapshot recover`): a time
that is negative or absurd (1e308 s), a batch of zero rows, a count below zero. The reader
already refused NaN and infinities; these are finite values no run can have made."""

from __future__ import annotations

from typing import Any

from probe.contract.records import (
    CompileEvent,
    GraphBreakRecord,
    LedgerEntry,
    Notice,
    RequestRecord,
)

MAX_SESSION_S = 1e9             # ~31 years of session clock
MAX_MS = MAX_SESSION_S * 1e3
MAX_BATCH = 1e6
MAX_JOULES = 1e12               # a MW for 11 days: no request on one device spends more

_RECORD_SECONDS = ("arrival_s", "start_s", "first_token_s", "end_s", "last_token_s")
_RECORD_MS = ("queue_ms", "compile_stall_ms", "encoder_ms", "decoder_ms", "ttft_ms", "tpot_ms",
              "latency_ms", "kv_wait_ms")
# the counts and sizes a record holds: a negative one contradicts what was served
COUNT_FIELDS = ("seq", "input_tokens", "padded_tokens", "output_tokens", "kv_cache_bytes",
                "kv_cache_used_bytes", "kv_self_attention_bytes", "kv_cross_attention_bytes")
_EVENT_SECONDS = ("start_s", "duration_s", "tracing_s", "aot_s", "inductor_s")


def _within(value: Any, low: float, high: float, what: str) -> str | None:
    if value is None or low <= value <= high:
        return None
    return f"expected {what} from {low:g} to {high:g}, got {value:.6g}"


def record_problem(record: RequestRecord) -> str | None:
    """`field: what is wrong` for the first figure of `record` out of its range; else None."""
    for name in _RECORD_SECONDS:
        problem = _within(getattr(record, name), 0.0, MAX_SESSION_S, "a time in seconds")
        if problem:
            return f"{name}: {problem}"
    for name in _RECORD_MS:
        problem = _within(getattr(record, name), 0.0, MAX_MS, "a duration in ms")
        if problem:
            return f"{name}: {problem}"
    for name in COUNT_FIELDS:
        if getattr(record, name) < 0:
            return f"{name}: expected a count >= 0, got {getattr(record, name)}"
    problem = _within(record.energy_j, 0.0, MAX_JOULES, "joules")
    if problem:
        return f"energy_j: {problem}"
    phases = record.energy_phases_j
    for phase in ("encode", "decode"):
        problem = _within(None if phases is None else getattr(phases, phase), 0.0, MAX_JOULES,
                          "joules")
        if problem:
            return f"energy_phases_j.{phase}: {problem}"
    if not 0 < record.batch_size <= MAX_BATCH:
        return (f"batch_size: expected a number of rows above 0 and at most {MAX_BATCH:g}, "
                f"got {record.batch_size:.6g}")
    return None


def event_problem(event: CompileEvent) -> str | None:
    for name in _EVENT_SECONDS:
        problem = _within(getattr(event, name), 0.0, MAX_SESSION_S, "a time in seconds")
        if problem:
            return f"{name}: {problem}"
    problem = _within(event.guard_us, 0.0, MAX_MS * 1e3, "a duration in µs")
    if problem:
        return f"guard_us: {problem}"
    if event.graphs < 0:
        return f"graphs: expected a count >= 0, got {event.graphs}"
    return None


def break_problem(graph_break: GraphBreakRecord) -> str | None:
    if graph_break.count < 0:
        return f"count: expected a count >= 0, got {graph_break.count}"
    return None


def notice_problem(notice: Notice) -> str | None:
    problem = _within(notice.t_s, 0.0, MAX_SESSION_S, "a time in seconds")
    return f"t_s: {problem}" if problem else None


def ledger_problem(entry: LedgerEntry) -> str | None:
    for name in ("calls", "median_of"):
        if getattr(entry, name) < 0:
            return f"{name}: expected a count >= 0, got {getattr(entry, name)}"
    if entry.median_of > entry.calls:
        return f"median_of: expected at most calls ({entry.calls}), got {entry.median_of}"
    for name in ("runtime_ms_total", "runtime_ms_median"):
        problem = _within(getattr(entry, name), 0.0, MAX_MS, "a duration in ms")
        if problem:
            return f"{name}: {problem}"
    problem = _within(entry.compile_s, 0.0, MAX_SESSION_S, "a time in seconds")
    return f"compile_s: {problem}" if problem else None


def problem_of(item: object) -> str | None:
    """The range problem of any saved record kind (None for a kind without ranges)."""
    if isinstance(item, RequestRecord):
        return record_problem(item)
    if isinstance(item, CompileEvent):
        return event_problem(item)
    if isinstance(item, GraphBreakRecord):
        return break_problem(item)
    if isinstance(item, Notice):
        return notice_problem(item)
    if isinstance(item, LedgerEntry):
        return ledger_problem(item)
    return None
