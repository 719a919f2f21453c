"""Where `s` writes, and how: names by local time, never a half-written file."""

from __future__ import annotations

import time
from pathlib import Path

from workloads.atomic import write_atomic


def snapshot_paths(folder: Path, now: float | None = None) -> tuple[Path, Path]:
    """(json, svg) named `infertop-YYYYmmdd-HHMMSS`, with -2, -3… when that second is taken."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    stem, n = f"infertop-{stamp}", 1
    while (folder / f"{stem}.json").exists() or (folder / f"{stem}.svg").exists():
        n += 1
        stem = f"infertop-{stamp}-{n}"
    return folder / f"{stem}.json", folder / f"{stem}.svg"


def write_text_atomic(path: Path, text: str) -> Path:
    """Readers see all or nothing (workloads.atomic.write_atomic)."""
    return write_atomic(path, [text])
