"""Where `s` writes, and how: names by local time, never a half-written file."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Iterable

from probe.common.atomic import check_output_folder
from probe.common.errors import TraceError


def snapshot_folder_problem(folder: Path, inputs: Iterable[str | os.PathLike] = ()) -> str | None:
    """Why `s` cannot save into `folder` (None: it can), in the words the start of the
    dashboard uses for `--snapshot-dir` too: the output rule every command applies."""
    try:
        check_output_folder(folder, "--snapshot-dir", inputs=inputs)
    except TraceError as exc:
        return str(exc)
    return None


def snapshot_paths(folder: Path, now: float | None = None) -> tuple[Path, Path]:
    """(json, svg) named `infertop-YYYYmmdd-HHMMSS`, with -2, -3… when that second is taken."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    stem, n = f"infertop-{stamp}", 1
    while (folder / f"{stem}.json").exists() or (folder / f"{stem}.svg").exists():
        n += 1
        stem = f"infertop-{stamp}-{n}"
    return folder / f"{stem}.json", folder / f"{stem}.svg"


