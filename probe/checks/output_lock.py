"""An output taken for the length of a run (`replay --out`, `bench --out`): an exclusive
fcntl lock on `.NAME.lock` beside it, so a second run given the same output is refused at its
start instead of silently replacing the first one's file at its end. The lock file holds the
owner's pid (for the message) and is removed when the run lets go; a kill -9 leaves it
unlocked, and the next run takes it."""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from probe.common.errors import BadInput, Busy


class OutputLock:
    def __init__(self, output: str | os.PathLike, option: str = "--out") -> None:
        output = Path(output)
        self.path = output.parent / f".{output.name}.lock"
        self._fd: int | None = None
        for _ in range(10):
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                             0o644)
            except OSError as exc:
                raise BadInput(f"{option} {output}: cannot take its lock {self.path} "
                                  f"({exc.strerror or exc})") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                owner = _owner(fd)
                os.close(fd)
                raise Busy(f"{option} {output}: another infertop{owner} is writing it; "
                                  f"give another {option} or wait for it to end") from None
            if _same_file(fd, self.path):   # not one its previous owner unlinked meanwhile
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
                self._fd = fd
                return
            os.close(fd)
        raise BadInput(f"{option} {output}: could not take its lock {self.path}")

    def release(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)        # unlinked while still held: no one takes a stale one
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> OutputLock:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _owner(fd: int) -> str:
    try:
        text = os.pread(fd, 32, 0).decode().strip()
    except (OSError, UnicodeDecodeError):
        return ""
    return f" (pid {text})" if text.isdigit() else ""


def _same_file(fd: int, path: Path) -> bool:
    try:
        here, there = os.fstat(fd), os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return os.path.samestat(here, there)
