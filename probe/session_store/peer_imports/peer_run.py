"""What a peer's result file says, before it becomes a session: its requests as the peer
measured them (at the client, by its clock, in its units made ms and s), its summary figures,
and what each figure means in that tool."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PeerRequest:
    """One request as a peer's client measured it. `start_s` is on the peer's own clock
    (epoch or monotonic seconds): only differences between requests of one file mean anything."""
    id: str
    start_s: float
    latency_ms: float               # the client's end-to-end: request sent → last byte read
    ttft_ms: float | None           # request sent → first token's chunk read (streamed only)
    tpot_ms: float | None           # per output token after the first (the tool's own figure)
    input_tokens: int               # as the tool counted them (0 where it did not say)
    output_tokens: int
    error: str | None = None


@dataclass(frozen=True)
class SummaryFigure:
    """One figure the peer computed itself and saved: kept as written, with its unit."""
    name: str                       # the tool's own name, e.g. "median_tpot_ms"
    value: float
    unit: str                       # "ms", "s", "req/s", "tokens", …
    means: str = ""                 # what it is in that tool, where the name does not say


@dataclass(frozen=True)
class PeerRun:
    """One run of the peer: one config of the imported session (guidellm's file holds one
    per benchmark of a sweep; the others one)."""
    name: str
    requests: tuple[PeerRequest, ...] = ()
    summary: tuple[SummaryFigure, ...] = ()
    skipped: dict[str, int] = field(default_factory=dict)   # why → how many records left out


@dataclass(frozen=True)
class PeerFile:
    """A peer's result file, read."""
    tool: str                       # "AIPerf", "guidellm", "vLLM bench serve", "inference-perf"
    version: str | None
    format: str                     # the file kind, e.g. "profile_export.jsonl"
    model: str | None
    runs: tuple[PeerRun, ...]
    # per RequestRecord field filled: what it is in this tool (clock, definition, source unit)
    meanings: dict[str, str]
    per_request: bool               # False: the file holds summary figures only
