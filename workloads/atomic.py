"""Write a file so that a failure leaves no partial output behind."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable, Iterable

from .errors import TraceError, file_error


def atomic_write_lines(path: str | os.PathLike[str], lines: Iterable[str]) -> None:
    """`write_atomic` after `check_output_file`: a path that cannot be written is a TraceError
    naming it, before anything is written."""
    write_atomic(check_output_file(path), lines)


def write_atomic(target: Path, lines: Iterable[str]) -> Path:
    """Text written whole or not at all (`replace_atomically`)."""
    def write(tmp_name: str) -> None:
        with open(tmp_name, "w", encoding="utf-8", newline="\n") as out:
            for line in lines:
                out.write(line)
    return replace_atomically(target, write)


def replace_atomically(target: Path, write: Callable[[str], None]) -> Path:
    """`write(path)` fills a temporary file in the same folder, then os.replace puts it into
    place: readers see all or nothing. Any exception while writing (including one raised by
    a lines iterator) removes the temporary file and leaves an existing `target` untouched;
    the one place infertop writes a file whole."""
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        write(tmp_name)
        # mkstemp makes the file 0600; give it the mode an ordinary new file would have.
        os.chmod(tmp_name, target.stat().st_mode & 0o777 if target.exists() else 0o644)
        os.replace(tmp_name, target)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        raise
    return target


def check_output_file(path: str | os.PathLike[str], option: str = "", *, make_folders: bool = False) -> Path:
    """Refuse, before any work, a file output that could not be written at the end.

    `make_folders`: the writer creates missing folders, so the nearest existing one must be
    a writable folder; otherwise the file's own folder must exist and be writable.
    """
    target = Path(path)
    if target.is_dir():
        raise _cannot_write(option, target, "it is a folder; give a file name")
    if target.exists() and not target.is_file():
        raise _cannot_write(option, target, "it exists and is not a regular file")
    _check_folder(target.parent, option, target, make_folders=make_folders)
    return target


def check_output_folder(path: str | os.PathLike[str], option: str = "") -> Path:
    """Refuse, before any work, an output folder that exists as something else or cannot be made."""
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise _cannot_write(option, target, "it exists and is not a folder")
    _check_folder(target if target.is_dir() else target.parent, option, target, make_folders=True)
    return target


def _check_folder(folder: Path, option: str, target: Path, *, make_folders: bool) -> None:
    existing = _nearest_existing(folder) if make_folders else folder
    if not existing.exists():
        raise _cannot_write(option, target, f"folder {existing} does not exist")
    if not existing.is_dir():
        raise _cannot_write(option, target, f"{existing} is a file, not a folder")
    try:
        # The real test (root passes os.access everywhere; a read-only mount does not):
        # on Linux an O_TMPFILE file, never visible in the folder.
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as exc:
        raise _cannot_write(option, target, f"folder {existing} takes no new files "
                                            f"({exc.strerror or exc})") from None


def _nearest_existing(folder: Path) -> Path:
    return next((p for p in (folder, *folder.parents) if p.exists()), Path("."))


def _cannot_write(option: str, target: Path, why: str) -> TraceError:
    return file_error(f"{option + ' ' if option else ''}{target}: cannot write: {why}")
