"""Optional re-ordering of rows by time, reported as a count."""

from __future__ import annotations

from typing import Any, Sequence, TypeVar

Row = TypeVar("Row", bound=tuple[Any, ...])


def sorted_rows(rows: Sequence[Row]) -> tuple[list[Row], int]:
    """Stable sort on the first element; also how many rows were not already in place."""
    ordered = sorted(rows, key=lambda r: r[0])
    moved = sum(1 for a, b in zip(rows, ordered) if a is not b)
    return ordered, moved
