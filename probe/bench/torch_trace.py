"""`--torch-trace`: structured compile logs in DIR/torch_trace, as TORCH_TRACE would write
them, and — when tlparse is installed — its HTML report of each log in DIR/tlparse."""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

TLPARSE_TIMEOUT_S = 300
INSTALL_HINT = "pip install tlparse"


class TraceFolder:
    """The TORCH_TRACE logs in a folder (a Ray study gathers its nodes' logs into one)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def logs(self) -> list[Path]:
        return sorted(self.folder.glob("*.log"))


class TorchTrace(TraceFolder):
    """The engine's probe re-initialises torch's logging on install, so attach after each
    engine is built."""

    def __init__(self, folder: Path) -> None:
        from torch._logging._internal import LazyTraceHandler, TorchLogsFormatter
        folder.mkdir(parents=True, exist_ok=True)
        super().__init__(folder)
        self.handler = LazyTraceHandler(str(folder))
        self.handler.setFormatter(TorchLogsFormatter(trace=True))

    def attach(self, _engine=None) -> None:
        from torch._logging._internal import trace_log
        trace_log.setLevel(logging.DEBUG)
        if self.handler not in trace_log.handlers:
            trace_log.addHandler(self.handler)

    def close(self) -> None:
        from torch._logging._internal import trace_log
        trace_log.removeHandler(self.handler)
        self.handler.close()


@dataclass(frozen=True)
class TlparseReport:
    log: str                    # relative to the bench folder
    html: str | None            # its index.html, relative to the bench folder, when made
    error: str | None = None


def tlparse_command() -> str | None:
    """tlparse beside this Python (a venv's bin is often not on PATH), else on PATH."""
    beside = Path(sys.executable).parent / "tlparse"
    return str(beside) if beside.is_file() else shutil.which("tlparse")


def run_tlparse(logs: list[Path], out_dir: Path,
                command: str | None = None) -> list[TlparseReport] | None:
    """tlparse over each log, into out_dir/tlparse/<log name>/; None when it is not installed.
    A log tlparse cannot read is reported with its error, never fatal."""
    command = command or tlparse_command()
    if command is None:
        return None
    reports = []
    for log in logs:
        target = out_dir / "tlparse" / log.stem
        try:
            done = subprocess.run([command, str(log), "-o", str(target), "--overwrite",
                                   "--no-browser"], capture_output=True, text=True,
                                  timeout=TLPARSE_TIMEOUT_S)
            error = None if done.returncode == 0 else (done.stderr.strip() or
                                                       f"exit status {done.returncode}")[-300:]
        except (OSError, subprocess.TimeoutExpired) as exc:
            error = f"{type(exc).__name__}: {exc}"
        html = target / "index.html"
        reports.append(TlparseReport(str(log.relative_to(out_dir)),
                                     str(html.relative_to(out_dir)) if html.is_file() else None,
                                     error))
    return reports
