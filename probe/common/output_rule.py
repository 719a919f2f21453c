"""The one rule every command that writes applies to its output before any work
(replay --out, bench --out, trace import|generate -o, snapshot export -o, snapshot recover -o,
the dashboard's --snapshot-dir):

- never one of the command's inputs, nor inside an input folder (a checkpoint), nor inside
  the package's own built-in traces;
- never in a device or system folder (/dev, /proc, /sys), followed through symlinks;
- the folder that holds the output must already exist and take new files: infertop creates
  no folders but the output itself when the output is a folder (bench's DIR, --snapshot-dir).

A refusal is a TraceError (exit 2) naming the option, the path and why."""

from __future__ import annotations

import os
import tempfile
from importlib import resources
from pathlib import Path
from typing import Iterable

from probe.common.errors import TraceError, file_error

SYSTEM_FOLDERS = ("/dev", "/proc", "/sys")
PathLike = str | os.PathLike[str]


def check_output_file(path: PathLike, option: str = "", *, inputs: Iterable[PathLike] = ()
                      ) -> Path:
    """A command's file output: not an input (nor the built-in traces), and writable."""
    target = Path(path)
    _check_system(target, option)
    _check_inputs(target, option, inputs)
    return check_writable_file(target, option)


def check_writable_file(path: PathLike, option: str = "") -> Path:
    """A new name or an existing regular file, outside the system folders, in an existing
    folder that takes new files (what every atomic write checks first)."""
    target = Path(path)
    _check_system(target, option)
    if target.is_dir():
        raise cannot_write(option, target, "it is a folder; give a file name")
    if target.exists() and not target.is_file():
        raise cannot_write(option, target, "it exists and is not a regular file")
    check_folder_takes_files(target.parent, option, target)
    return target


def check_output_folder(path: PathLike, option: str = "", *, inputs: Iterable[PathLike] = ()
                        ) -> Path:
    """A folder output: an existing writable folder, or a new one whose parent exists."""
    target = Path(path)
    _check_system(target, option)
    _check_inputs(target, option, inputs)
    if target.exists() and not target.is_dir():
        raise cannot_write(option, target, "it exists and is not a folder")
    check_folder_takes_files(target if target.is_dir() else target.parent, option, target)
    return target


def builtin_traces_folder() -> Path:
    return Path(str(resources.files("workloads") / "builtin"))


def _check_system(target: Path, option: str) -> None:
    real = _real(target)
    for folder in SYSTEM_FOLDERS:
        if real == folder or _inside(real, folder):
            raise cannot_write(option, target, f"{folder} is a system folder (devices, "
                                               f"processes), not a place for files")


def _check_inputs(target: Path, option: str, inputs: Iterable[PathLike]) -> None:
    real = _real(target)
    builtin = builtin_traces_folder()
    if _same(target, builtin) or _inside(real, _real(builtin)):
        raise cannot_write(option, target, f"it is inside infertop's own built-in traces "
                                           f"({builtin})")
    for given in inputs:
        source = Path(given)
        if not os.path.lexists(source):    # a preset's or a built-in trace's name
            continue
        if _same(target, source):
            raise cannot_write(option, target, f"it is the input {source}; give another name")
        if source.is_dir() and _inside(real, _real(source)):
            raise cannot_write(option, target, f"it is inside the input folder {source}")


def _real(path: Path) -> str:
    return os.path.realpath(os.path.abspath(path))


def _same(a: Path, b: Path) -> bool:
    if _real(a) == _real(b):
        return True
    try:
        return os.path.samefile(a, b)   # a hard link, a bind mount
    except OSError:
        return False


def _inside(real: str, folder: str) -> bool:
    return real.startswith(folder.rstrip(os.sep) + os.sep)


def check_folder_takes_files(folder: Path, option: str, target: Path) -> None:
    if not folder.exists():
        raise cannot_write(option, target, f"folder {folder} does not exist")
    if not folder.is_dir():
        raise cannot_write(option, target, f"{folder} is a file, not a folder")
    try:
        # The real test (root passes os.access everywhere; a read-only mount does not):
        # on Linux an O_TMPFILE file, never visible in the folder.
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise cannot_write(option, target, f"folder {folder} takes no new files "
                                           f"({exc.strerror or exc})") from None


def cannot_write(option: str, target: Path, why: str) -> TraceError:
    return file_error(f"{option + ' ' if option else ''}{target}: cannot write: {why}")
