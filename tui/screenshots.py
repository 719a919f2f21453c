"""`python -m tui.screenshots [OUT]`: SVG screenshots of the dashboard's main states, for the
README, from the synthetic session (no model, no engine process).

Written to OUT (default `screenshots/`): baseline, compiling, after-bucketing, snapshot-saved
at 120×40, and compact at 80×24.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tui.snapshot_files import write_text_atomic


@dataclass(frozen=True)
class Shot:
    name: str
    stage: str
    size: tuple[int, int] = (120, 40)
    press: tuple[str, ...] = ()
    notifications: bool = False


SHOTS = (
    Shot("baseline", "baseline"),
    Shot("compiling", "compiling"),
    Shot("after-bucketing", "bucketing"),
    Shot("snapshot-saved", "bucketing", press=("s",), notifications=True),
    Shot("compact-80x24", "compiled", size=(80, 24)),
)


async def capture(shot: Shot, snapshot_dir: Path) -> str:
    from tui.app import InfertopApp
    from tui.engine_handle import FakeEngine
    from tui.synthetic import stage

    snapshot = stage(shot.stage)
    app = InfertopApp(FakeEngine(), initial=snapshot, options=snapshot.options,
                      snapshot_dir=snapshot_dir, speed=snapshot.replay.speed,
                      clock=lambda: 0.0)
    async with app.run_test(size=shot.size, notifications=shot.notifications) as pilot:
        for key in shot.press:
            await pilot.press(key)
        await pilot.pause(0.3)   # let the fake engine's reply arrive and toasts appear
        await pilot.pause()
        return app.export_screenshot(title=f"infertop — {shot.name}")


async def write_all(out: Path, names: set[str] | None = None) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    cwd = Path.cwd()
    with tempfile.TemporaryDirectory() as scratch:
        os.chdir(scratch)   # so the toast reads "snapshots/infertop-….svg", as for a user
        try:
            for shot in SHOTS:
                if names is None or shot.name in names:
                    svg = await capture(shot, Path("snapshots"))
                    written.append(write_text_atomic(cwd / out / f"{shot.name}.svg", svg))
        finally:
            os.chdir(cwd)
    return written


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0]) if argv else Path("screenshots")
    for path in asyncio.run(write_all(out)):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
