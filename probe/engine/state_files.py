"""infertop's per-user state folder and the files it keeps there (engine logs, session and
replay journals): one module both the engine process plumbing and the headless replay use."""

from __future__ import annotations

import os
import stat
import sys
import tempfile
import time
from pathlib import Path

KEEP_LOGS = 10
LOG_PREFIX = "engine-"
KEEP_JOURNALS = 10
JOURNAL_PREFIX = "session-"
REPLAY_JOURNAL_PREFIX = "replay-"  # headless runs': pruned apart from the dashboard's


def state_dir() -> Path:
    """infertop's per-user state folder: $XDG_STATE_HOME/infertop, else
    ~/.local/state/infertop (the XDG spec ignores a relative $XDG_STATE_HOME)."""
    base = os.environ.get("XDG_STATE_HOME", "")
    root = Path(base) if os.path.isabs(base) else Path.home() / ".local" / "state"
    return root / "infertop"


def _private_dir(path: Path) -> Path:
    """Create `path` 0o700 if needed; refuse one that is a symlink or someone else's."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        pass
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise OSError(f"{path} is not a directory")
    if info.st_uid != os.getuid():
        raise PermissionError(f"{path} belongs to another user")
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(path, 0o700)
    return path


def _prune(folder: Path, prefix: str, suffix: str, keep: int) -> None:
    """Delete all but the newest `keep` files named prefix…suffix (by modification time)."""
    found = []
    for entry in os.scandir(folder):
        if entry.name.startswith(prefix) and entry.name.endswith(suffix):
            try:
                found.append((entry.stat(follow_symlinks=False).st_mtime, entry.name))
            except FileNotFoundError:   # another dashboard pruned it first
                continue
    found.sort()
    for _, name in found[:max(len(found) - keep, 0)]:
        try:
            os.unlink(folder / name)
        except FileNotFoundError:
            pass


def _new_state_file(prefix: str, suffix: str, folder: Path | None, keep: int) -> str:
    """A fresh, empty file in the state folder; the oldest of its kind beyond `keep` go.
    Created 0o600 with O_EXCL|O_NOFOLLOW: an existing name, or a symlink planted there, is
    never written through; the next name is tried instead."""
    folder = _private_dir(folder or state_dir())
    _prune(folder, prefix, suffix, keep - 1)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    for attempt in range(100):
        path = folder / f"{prefix}{stamp}-{os.getpid()}-{attempt}{suffix}"
        try:
            os.close(os.open(path, flags, 0o600))
        except FileExistsError:
            continue
        return str(path)
    raise FileExistsError(f"no free {prefix}*{suffix} name in {folder}")


def new_log(folder: Path | None = None, keep: int = KEEP_LOGS) -> str:
    """A fresh engine log (one per engine start)."""
    return _new_state_file(LOG_PREFIX, ".log", folder, keep)


def state_folder_problem(exc: OSError) -> str:
    """Why the state folder takes no file, naming the variable that chose it (and its path)."""
    base = os.environ.get("XDG_STATE_HOME", "")
    where = (f"XDG_STATE_HOME={base}" if os.path.isabs(base)
             else f"{state_dir()} (set XDG_STATE_HOME to use another folder)")
    return f"the state folder cannot be used ({where}: {exc.strerror or exc})"


def new_log_or_temporary() -> str:
    """A fresh engine log; where the state folder takes none, one in the temporary folder,
    said in one warning that names the variable (a log is no reason not to run)."""
    try:
        return new_log()
    except OSError as exc:
        problem = state_folder_problem(exc)
    handle, path = tempfile.mkstemp(prefix=LOG_PREFIX, suffix=".log")
    os.close(handle)
    print(f"infertop: warning: {problem}: the engine log is {path}, and no session journal "
          f"is kept (a run killed before it saves loses what it served)", file=sys.stderr)
    SAID.add(problem)
    return path


SAID: set[str] = set()      # the state folder problems already warned of, in this process


def new_journal(folder: Path | None = None, keep: int = KEEP_JOURNALS) -> str:
    """A fresh session journal (one per dashboard session, shared by its engine restarts)."""
    return _new_state_file(JOURNAL_PREFIX, ".jsonl", folder, keep)


def new_replay_journal(folder: Path | None = None, keep: int = KEEP_JOURNALS) -> str:
    """A fresh journal for one headless `replay`."""
    return _new_state_file(REPLAY_JOURNAL_PREFIX, ".jsonl", folder, keep)
