"""`python -m tools.gpu_walk OUT SECONDS`, `make gpu-check`'s dashboard walk (run as a process
of its own, so probe/ never imports the UI): the live dashboard on the GPU, driven headless through
Textual's Pilot (the GPU machine has no terminal), its screens saved as SVG: the baseline,
then `g`, `c` and the compiled config."""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

from probe.engine.process.engine_process import EngineClient, launch_from_args
from probe.engine.process.local_link import LocalLink


async def _walk(model: str, out: Path, seconds: float, log) -> dict:
    from tui.app import InfertopApp

    args = argparse.Namespace(model=model, device="cuda", trace="azure-conv", opt=[],
                              buckets=None, speed=None, requests=None, threads=None,
                              max_input=512, max_output=512, metrics_port=None, slo=None,
                              max_batch=0, kv_budget=None, drift_every=8)
    launch = launch_from_args(args)
    engine = EngineClient(launch)
    engine.open_journal()
    app = InfertopApp(LocalLink(engine), options=launch.options, snapshot_dir=out, speed=launch.speed)
    shots: list[str] = []
    started = time.monotonic()
    try:
        async with app.run_test(size=(160, 48), notifications=True) as pilot:
            await pilot.pause(seconds / 3)
            shots.append(_save(app, out, "dashboard-1-baseline.svg"))
            await pilot.press("g")
            await pilot.press("c")
            await pilot.pause(2 * seconds / 3)
            shots.append(_save(app, out, "dashboard-2-g-then-c.svg"))
            await pilot.press("q")
    finally:
        engine.stop()
    log(f"dashboard: {time.monotonic() - started:.0f} s on the GPU, screens {', '.join(shots)}")
    return {"seconds": time.monotonic() - started, "screens": shots}


def _save(app, out: Path, name: str) -> str:
    app.save_screenshot(filename=name, path=str(out))
    return name


def dashboard_walk(model: str, out: Path, *, log, seconds: float = 60.0) -> dict:
    try:
        return asyncio.run(_walk(model, out, seconds, log))
    except Exception as exc:  # the other sections' results stand
        log(f"dashboard: failed: {type(exc).__name__}: {exc}")
        return {"failed": f"{type(exc).__name__}: {exc}"[:400]}


if __name__ == "__main__":
    import json
    import sys
    result = dashboard_walk(sys.argv[1], Path(sys.argv[2]), log=print,
                            seconds=float(sys.argv[3]))
    print(json.dumps(result))
