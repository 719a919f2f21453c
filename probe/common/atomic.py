"""Write a file so that a failure leaves no partial output behind."""

from __future__ import annotations

import contextlib
import glob
import json
import os
import tempfile
from pathlib import Path
from typing import Callable, Iterable

from probe.common.output_rule import check_output_file, check_output_folder, check_writable_file

__all__ = ["atomic_write_lines", "check_output_file", "check_output_folder",
           "remove_temporaries", "replace_atomically", "write_atomic",
           "write_json_atomic"]


def atomic_write_lines(path: str | os.PathLike[str], lines: Iterable[str]) -> None:
    """`write_atomic` after `check_writable_file`: a path that cannot be written is a
    TraceError naming it, before anything is written. (Whether it may be written at all, next
    to the command's inputs, each command checks first with `check_output_file`.)"""
    write_atomic(check_writable_file(path), lines)


def write_json_atomic(path: str | os.PathLike, document: dict) -> Path:
    """Write to a temporary file in the same folder, then rename: never a half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_atomic(path, [json.dumps(document, indent=1), "\n"])


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
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp",
                                        dir=target.parent)
    except OSError as exc:
        raise _naming(exc, target) from None
    os.close(fd)
    try:
        write(tmp_name)
        # mkstemp makes the file 0600; give it the mode an ordinary new file would have.
        os.chmod(tmp_name, target.stat().st_mode & 0o777 if target.exists() else 0o644)
        os.replace(tmp_name, target)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        if isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError):
            raise _naming(exc, target) from None
        raise
    return target


def _naming(exc: OSError, target: Path) -> OSError:
    """The error as the file being written (a full disk says "No space left on device" of no
    file: the message then names the output, not its temporary)."""
    if exc.filename == str(target) or exc.errno is None:
        return exc
    return type(exc)(exc.errno, exc.strerror or str(exc), str(target))


def remove_temporaries(target: Path) -> None:
    """Remove what a writer of `target` killed mid-write (SIGKILL: no cleanup ran) left: its
    `.NAME.*.tmp` files. Only for a target whose writer is known dead and whose lock is held."""
    with contextlib.suppress(OSError):
        for leftover in target.parent.glob(f".{glob.escape(target.name)}.*.tmp"):
            with contextlib.suppress(OSError):
                leftover.unlink()
