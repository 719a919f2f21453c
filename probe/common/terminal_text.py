"""Strings that came from a file, made safe to show on a terminal or in the dashboard.

A snapshot's `model.name`, a trace's name, a failure's reason, a path or a tag is whatever the
file holds: an `ESC ] 0 ; … BEL` in it retitles the terminal window, an `ESC [ 2 J` clears the
screen, a bidi override reorders what follows. `terminal_text` escapes every such character
into visible text (`\\x1b`, `\\x9b`, `\\u202e`), so an ESC sequence arrives as harmless
letters; printable text, accents and CJK included, is kept as is. It is idempotent (its output
holds no control character), so a string escaped at its source may pass a later guard again.

It lives in workloads/, the lowest layer (probe/ and tui/ import it; workloads/ imports
neither), so every printer and every panel uses this one function. Rich markup is a separate
matter: the dashboard shows it literally (tests/tui/test_markup_safety.py).
"""

from __future__ import annotations

# C0 controls, DEL, C1 controls, and the format characters that move or hide text: line and
# paragraph separators, bidi embeddings/overrides/isolates, the marks that flip direction.
_UNSAFE = ([*range(0x00, 0x20), *range(0x7F, 0xA0), 0x2028, 0x2029, 0x200E, 0x200F, 0x061C,
            *range(0x202A, 0x202F), *range(0x2066, 0x206A)])
_ESCAPES = {code: (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}") for code in _UNSAFE}
_ESCAPES_KEEPING_NEWLINES = {code: text for code, text in _ESCAPES.items() if code != 0x0A}


def terminal_text(value: object, *, keep_newlines: bool = False) -> str:
    """`str(value)` with every control character escaped as visible text (newlines kept only
    when asked: a multi-line report; a name, a reason or a cell is one line)."""
    text = value if isinstance(value, str) else str(value)
    if text.isprintable():  # the usual case, in C: nothing to escape
        return text
    return text.translate(_ESCAPES_KEEPING_NEWLINES if keep_newlines else _ESCAPES)


# the same characters as JSON escapes (`\u009b`, not `\x9b`, which JSON does not have); a raw
# newline in json.dumps' output is only ever its indentation (a string's is written `\n`)
_JSON_ESCAPES = {code: f"\\u{code:04x}" for code in _UNSAFE if code != 0x0A}


def terminal_json(value: object, *, indent: int | None = None) -> str:
    """`json.dumps(value)` for a terminal: readable text kept (accents, CJK), but every
    character `terminal_text` escapes written as a `\\uXXXX` escape, which JSON readers turn
    back into the same string. (json.dumps escapes only C0 controls; DEL, C1 such as U+009B
    and bidi controls such as U+202E would reach the terminal raw.)"""
    import json

    return json.dumps(value, indent=indent, ensure_ascii=False).translate(_JSON_ESCAPES)
