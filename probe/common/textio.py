"""Open and read the text files every reader takes, whatever bytes they hold.

Files are decoded as UTF-8 with `surrogateescape`, so an undecodable byte becomes a lone
surrogate at its place instead of an exception raised a whole decoding chunk later: each line
is then checked, and the first bad byte is reported with its line. A NUL byte is refused too:
it is never part of these text formats, and it is the mark of a binary or UTF-16 file.
Device files are refused before opening (reading /dev/zero would never end); pipes and FIFOs
are read as streams, once.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any, Iterator, TextIO

from probe.common.errors import file_error

_NOT_TEXT = re.compile("[\x00\udc80-\udcff]")
_UTF16_BOMS = ("\udcff\udcfe", "\udcfe\udcff")  # FF FE / FE FF, as surrogateescape decodes them


def refuse_devices(path: Path) -> None:
    """A character or block device is an error; a missing file is left to open() to name."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        raise file_error(f"{path}: is a device, not a trace or snapshot file")


def open_text(path: Path) -> TextIO:
    """utf-8-sig: spreadsheet exports often start with a byte-order mark."""
    refuse_devices(path)
    try:
        return path.open("r", encoding="utf-8-sig", errors="surrogateescape", newline="")
    except OSError as exc:
        raise file_error(f"{path}: cannot read: {exc.strerror or exc}") from None


def check_text(text: str, path: Path, first_line: int = 1) -> None:
    """Raise a file error naming path:line if `text` holds an undecodable byte or a NUL."""
    if text.isascii() and "\x00" not in text:  # isascii is O(1): the usual JSON fast path
        return
    match = _NOT_TEXT.search(text)
    if match is None:
        return
    line = first_line + text.count("\n", 0, match.start())
    if match.group() == "\x00":
        problem = "contains a NUL byte: not a text file (binary, or UTF-16/UTF-32?)"
    else:
        problem = f"not UTF-8 text (byte 0x{ord(match.group()) - 0xDC00:02x})"
    advice = "infertop reads UTF-8"
    if line == 1 and text.startswith(_UTF16_BOMS):
        problem, advice = "is UTF-16 (by its byte-order mark)", "convert it: iconv -f UTF-16 -t UTF-8"
    raise file_error(f"{path}:{line}: {problem}; {advice}")


def checked_lines(handle: TextIO, path: Path) -> Iterator[str]:
    """The lines of an open_text() handle, each checked by check_text()."""
    try:
        for number, line in enumerate(handle, start=1):
            check_text(line, path, number)
            yield line
    except OSError as exc:
        raise file_error(f"{path}: cannot read: {exc.strerror or exc}") from None


def read_text(path: Path) -> str:
    """The whole file, checked: for JSON documents (ShareGPT, snapshots)."""
    with open_text(path) as handle:
        try:
            text = handle.read()
        except OSError as exc:
            raise file_error(f"{path}: cannot read: {exc.strerror or exc}") from None
    check_text(text, path)
    return text


class JsonProblem(ValueError):
    """Why a JSON text could not be parsed; `line` where the parser knows it."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line

    def located(self, path: object) -> str:
        """`path:line`, or `path` when the line is not known."""
        return f"{path}:{self.line}" if self.line else f"{path}"


def parse_json(text: str) -> Any:
    """json.loads, with every way it fails as a JsonProblem: bad syntax, nesting deeper than
    Python's recursion limit, an integer longer than Python converts (4300 digits)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise JsonProblem(f"not valid JSON ({exc.msg} at column {exc.colno})", exc.lineno) from None
    except RecursionError:
        raise JsonProblem("not valid JSON here: nested too deeply") from None
    except ValueError:
        raise JsonProblem("not valid JSON here: a number with too many digits") from None
