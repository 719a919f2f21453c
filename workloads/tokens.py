"""A tokenizer-free token count, used when no real tokenizer is given.

T5's SentencePiece vocabulary gives roughly 1.3 tokens per English word and about 4 UTF-8
bytes per token; the estimate takes the larger of words × 4/3 and bytes / 4, so that text
without spaces (code, CJK) is not counted as one word. The engine passes the model's own
tokenizer instead when it has one.
"""

from __future__ import annotations

import math
from typing import Callable

TokenCounter = Callable[[str], int]


def estimate_tokens(text: str) -> int:
    """0 for empty or whitespace-only text, else at least 1."""
    if not text.strip():
        return 0
    words = len(text.split())
    utf8_bytes = len(text.encode("utf-8"))
    return max(1, math.ceil(max(words * 4 / 3, utf8_bytes / 4)))
