"""A bench run stopped by SIGTERM at chosen moments, many times, cheaply: this process imports
torch and the study once, then forks one bench per moment (as the shell would start it:
default signal handlers, nothing run yet) and sends it SIGTERM that many seconds after it
started (a moment `f2.5`), after its study began, its first progress line (`s2.5`), or at a
fraction of the study's length (`r0.4`), measured by a first try `m` that is never signalled.
Prints one JSON line per try: the moment, the exit status, whether report.json and
report.md were written, the output folder's state and the tail of its stderr.

    python -m tests.bench.bench_stopper OUT_BASE MOMENT[,MOMENT…] -- BENCH ARGS…

Used by tests/bench/test_bench_stops.py."""

from __future__ import annotations

import json
import os
import runpy
import signal
import sys
import time
from pathlib import Path


def _warm_imports() -> None:
    """What every try would import: done once, before the forks (no torch op runs here, so
    no thread pool exists to be broken by a fork)."""
    import torch  # noqa: F401
    import transformers  # noqa: F401

    import probe.bench.report  # noqa: F401
    import probe.bench.runner  # noqa: F401
    import probe.bench.study  # noqa: F401
    import probe.engine.engine  # noqa: F401
    import probe.engine.model.loading  # noqa: F401


def _wait(child: int, seconds: float, until=lambda: False) -> int | None:
    """The child's exit status if it ends within `seconds` (or before `until()` holds)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not until():
        done, raw = os.waitpid(child, os.WNOHANG)
        if done:
            return -os.WTERMSIG(raw) if os.WIFSIGNALED(raw) else os.waitstatus_to_exitcode(raw)
        time.sleep(0.02)
    return None


STUDY_S: list[float] = []       # the `m` try's study, first progress line to exit


def _one(out: Path, moment: str, argv: list[str]) -> dict:
    log = out.with_suffix(".err")
    child = os.fork()
    if child == 0:                      # the bench, as from the command line
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_DFL if s != signal.SIGINT else signal.default_int_handler)
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        sys.argv = ["infertop", "bench", *argv, "--out", str(out)]
        try:                            # `python -m infertop bench …`
            runpy.run_module("infertop", run_name="__main__", alter_sys=True)
            status = 0
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 1
        except BaseException:           # noqa: BLE001 - said in the log, as the CLI would not
            import traceback
            traceback.print_exc()
            status = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    status, signalled = None, False
    began = time.monotonic()
    if moment[0] in "smr":              # after the study began: its first progress line
        status = _wait(child, 600, lambda: "% E" in _text(log))
        began = time.monotonic()
    if status is None and moment == "m":    # measured: never signalled
        status = _wait(child, 1200)
        STUDY_S.append(time.monotonic() - began)
    if status is None and moment != "m":
        at = float(moment[1:]) * (STUDY_S[0] if moment[0] == "r" and STUDY_S else 1.0)
        status = _wait(child, at)
    if status is None:
        signalled = True
        os.kill(child, signal.SIGTERM)
        status = _wait(child, 120)
    if status is None:                  # never ended: a stop lost
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
    err = log.read_text(errors="replace") if log.exists() else ""
    return {"moment": moment, "signalled": signalled, "status": status, "folder": out.exists(),
            "report_json": (out / "report.json").exists(),
            "report_md": (out / "report.md").exists(),
            "runs": len(list((out / "runs").glob("*.json"))) if out.exists() else 0,
            "err": err[-1500:]}


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def main(argv: list[str]) -> int:
    base, moments, rest = Path(argv[0]), argv[1].split(","), argv[3:]
    _warm_imports()
    for i, moment in enumerate(moments):
        print(json.dumps(_one(base / f"try{i}", moment, rest)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
