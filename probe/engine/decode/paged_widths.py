"""How many blocks of each slot's tables the paged step attends over: the blocks the longest
active request needs, rounded up to one of a few widths, so the step reads the blocks in use
(not the whole table) and compiles once per width, never once per length.

vLLM's kernel walks each sequence's own block list; a gather followed by T5's attention (what
paged.py does) needs one width for the batch, so the batch's widest need decides. transformers'
continuous batching pads its KV read length the same way (to a power of two, capped at the
cache: `pad_to_pow2` in transformers/generation/continuous_batching/utils.py, not a public API,
so the two lines are here); the ladder below also caps the number of widths, so the compiles
stay under dynamo's recompile limit whatever the table's size.
"""

from __future__ import annotations

import math

MAX_WIDTHS = 6          # widths per table: full, full/2, … full/32 (rounded up)


def width_ladder(full: int, count: int = MAX_WIDTHS) -> tuple[int, ...]:
    """The widths a table of `full` blocks is attended at, ascending: `full` halved up to
    `count - 1` times (rounded up), so each width is at most twice the one below it."""
    if full < 1 or count < 1:
        raise ValueError(f"a table needs a width and a count of at least 1 (got {full}, {count})")
    return tuple(sorted({math.ceil(full / 2 ** k) for k in range(count)}))


def attended_width(needed: int, ladder: tuple[int, ...]) -> int:
    """The narrowest width of the ladder that holds `needed` blocks (the widest when none
    does: a table never holds more than its full width)."""
    return next((width for width in ladder if width >= needed), ladder[-1])
