"""TORCHINDUCTOR_CACHE_DIR that cannot be used (a file, a read-only folder, a folder that
cannot be made) is no reason not to run: the run compiles without a persistent cache, in a
fresh temporary folder, and says so once, naming the variable. Checked before torch is
imported, so inductor never sees the unusable folder. Torch-free."""

from __future__ import annotations

import os
import sys
import tempfile

VARIABLE = "TORCHINDUCTOR_CACHE_DIR"


def folder_problem(path: str) -> str | None:
    """Why `path` cannot hold inductor's cache (None: it can, or can be made)."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        return exc.strerror or str(exc)
    if not os.path.isdir(path):
        return "not a folder"
    if not os.access(path, os.W_OK | os.X_OK):
        return "no permission to write in it"
    try:
        fd, probe = tempfile.mkstemp(dir=path, prefix=".infertop-")
    except OSError as exc:          # a read-only mount says so only here
        return exc.strerror or str(exc)
    os.close(fd)
    os.unlink(probe)
    return None


def usable_inductor_cache() -> str | None:
    """Point TORCHINDUCTOR_CACHE_DIR at a temporary folder if the one it names cannot be
    used; returns the warning said (None: nothing to say)."""
    path = os.environ.get(VARIABLE)
    if not path:
        return None
    problem = folder_problem(path)
    if problem is None:
        return None
    fallback = tempfile.mkdtemp(prefix="infertop-inductor-")
    os.environ[VARIABLE] = fallback
    warning = (f"infertop: warning: {VARIABLE}={path}: cannot be used ({problem}): compiling "
               f"without a persistent cache (in {fallback})")
    print(warning, file=sys.stderr)
    return warning
