"""The values a trace is made of. Frozen: they cross threads (replayer → engine)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TraceRequest:
    timestamp_ms: float
    # For text requests: the length the file gave, or an estimate; the engine re-tokenizes.
    input_length: int
    output_length: int
    text: str | None = None
    id: str | None = None
    tag: str | None = None


@dataclass(frozen=True)
class Trace:
    name: str
    requests: tuple[TraceRequest, ...]
    source: str | None = None  # a path, or "builtin:chat"

    def input_lengths(self) -> list[int]:
        return [r.input_length for r in self.requests]

    def output_lengths(self) -> list[int]:
        return [r.output_length for r in self.requests]

    def timestamps_ms(self) -> list[float]:
        return [r.timestamp_ms for r in self.requests]

    def duration_s(self) -> float:
        if not self.requests:
            return 0.0
        return (self.requests[-1].timestamp_ms - self.requests[0].timestamp_ms) / 1000.0

    def __len__(self) -> int:
        return len(self.requests)


@dataclass(frozen=True)
class LoadReport:
    """What reading a file did besides producing requests: said, never silent."""

    rows_read: int
    skipped: tuple[tuple[str, int], ...] = ()  # (reason, count), from --skip-bad
    notes: tuple[str, ...] = ()  # e.g. "dropped 12 failed requests (0 response tokens)"

    @property
    def skipped_total(self) -> int:
        return sum(n for _, n in self.skipped)

    def summary_lines(self) -> list[str]:
        lines = list(self.notes)
        if self.skipped:
            detail = ", ".join(f"{n} {reason}" for reason, n in self.skipped)
            lines.append(f"skipped {self.skipped_total} bad rows ({detail})")
        return lines
