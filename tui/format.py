"""Text that must fit the dashboard's cells: cut to a width, or the richest form that fits.
(Numbers are rendered by probe/common/units.py, shared with the reports.)"""

from __future__ import annotations

from rich.cells import cell_len


def truncate(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def truncate_left(text: str, width: int) -> str:
    """Keep the end (a path's file:line), mark the cut at the start."""
    return text if len(text) <= width else "…" + text[len(text) - max(width - 1, 0):]


def fitting(width: int, *choices: str) -> str:
    """The first of `choices` (richest first) that fits `width` cells, else the last."""
    return next((c for c in choices if cell_len(c) <= width), choices[-1])
