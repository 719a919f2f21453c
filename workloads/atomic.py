"""Write a file so that a failure leaves no partial output behind."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Iterable

from .errors import file_error


def atomic_write_lines(path: str | os.PathLike[str], lines: Iterable[str]) -> None:
    """Write to a temporary name in the same folder, then os.replace it into place.

    Any exception while writing (including one raised by the `lines` iterator) removes the
    temporary file and leaves an existing `path` untouched.
    """
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise file_error(f"{target}: cannot write: folder {folder} does not exist")
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            for line in lines:
                out.write(line)
        # mkstemp makes the file 0600; give it the mode an ordinary new file would have.
        os.chmod(tmp_name, target.stat().st_mode & 0o777 if target.exists() else 0o644)
        os.replace(tmp_name, target)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        raise
