"""A value as an error message quotes it: repr() cut short, so a message names the value
without carrying a megabyte of it."""

from __future__ import annotations

from typing import Any


def shown(value: Any, limit: int = 40) -> str:
    """repr() cut to `limit` characters: a message quotes the value, not a megabyte of it."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"
