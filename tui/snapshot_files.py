"""Where `s` writes, and how: names by local time, never a half-written file."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path


def snapshot_paths(folder: Path, now: float | None = None) -> tuple[Path, Path]:
    """(json, svg) named `infertop-YYYYmmdd-HHMMSS`, with -2, -3… when that second is taken."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    stem, n = f"infertop-{stamp}", 1
    while (folder / f"{stem}.json").exists() or (folder / f"{stem}.svg").exists():
        n += 1
        stem = f"infertop-{stamp}-{n}"
    return folder / f"{stem}.json", folder / f"{stem}.svg"


def write_text_atomic(path: Path, text: str) -> Path:
    """A temporary file in the same folder, then os.replace: readers see all or nothing."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)   # mkstemp makes it private; a screenshot is meant to be shared
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
