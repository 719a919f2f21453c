"""Read a CSV file by column name, never by position."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Iterator, Sequence

from probe.common.errors import TraceError, file_error
from probe.common.textio import checked_lines, open_text


def csv_rows(
    path: Path, required: Sequence[str], optional: Sequence[str] = (), *, any_of: Sequence[str] = ()
) -> Iterator[tuple[str, dict[str, str] | TraceError]]:
    """Yield ("file:line", {column: value}) for every data row, by header name.

    Columns are matched after stripping spaces. A row with the wrong number of fields yields a
    TraceError in place of the dict, so the caller decides whether to skip it. `any_of`: at
    least one of these columns must exist (e.g. input_length or text).
    """
    with open_text(path) as handle:
        reader = csv.reader(checked_lines(handle, path))
        try:
            header = next(reader)
        except StopIteration:
            raise file_error(f"{path}: empty trace: the file is empty") from None
        except csv.Error as exc:
            raise file_error(f"{path}:1: cannot parse the CSV header: {exc}") from None
        names = [h.strip() for h in header]
        twice = _repeated(names)
        if twice is not None:
            first, second = [n + 1 for n, name in enumerate(names) if name == twice][:2]
            raise file_error(f"{path}:1: column {twice!r} appears twice (columns {first} and "
                             f"{second}): which one holds the values is ambiguous")
        missing = [c for c in required if c not in names]
        if any_of and not any(c in names for c in any_of):
            missing.append(" or ".join(any_of))
        if missing:
            raise file_error(
                f"{path}:1: missing column {', '.join(repr(m) for m in missing)} "
                f"(found: {', '.join(names) or 'nothing'}; expected: {', '.join(required)})"
            )
        wanted = [c for c in (*required, *optional, *any_of) if c in names]
        index = {c: names.index(c) for c in wanted}
        width = len(names)
        while True:
            try:
                fields = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                yield f"{path}:{reader.line_num}", TraceError(f"{path}:{reader.line_num}: bad CSV: {exc}")
                continue
            where = f"{path}:{reader.line_num}"
            if not fields or (len(fields) == 1 and not fields[0].strip()):
                continue  # blank line
            if len(fields) != width:
                yield where, TraceError(
                    f"{where}: expected {width} fields ({', '.join(names)}), got {len(fields)}"
                )
                continue
            yield where, {c: fields[i] for c, i in index.items()}


def _repeated(names: Sequence[str]) -> str | None:
    """The first column name the header holds twice (empty names, a spreadsheet's trailing
    commas, are not columns)."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            return name
        if name:
            seen.add(name)
    return None
