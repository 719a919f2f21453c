"""`python -m tools.screenshots SESSION.json… [--out DIR] [--size COLSxROWS]`: redraw saved
sessions as SVG screenshots through `--load`'s read-only view, so every picture presented as a
result comes from a real run (the README's were recorded live with `s`, and their 80×24
versions redrawn from the same saved sessions). The synthetic session (tests/tui/synthetic.py) is a
test fixture only.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from probe.common.atomic import write_atomic
from tui.launch import saved_view


async def capture(session: Path, size: tuple[int, int]) -> str:
    from tui.app import InfertopApp

    view = saved_view(session)
    app = InfertopApp(None, initial=view, options=view.options,
                      snapshot_dir=Path("snapshots"), speed=view.replay.speed,
                      read_only=True, source=session.name, clock=lambda: 0.0)
    async with app.run_test(size=size, notifications=False) as pilot:
        await pilot.pause()
        return app.export_screenshot(title=f"infertop --load {session.name}")


def svg_name(session: Path, size: tuple[int, int]) -> str:
    return f"{session.stem}-{size[0]}x{size[1]}.svg"


async def write_all(sessions: list[Path], out: Path, size: tuple[int, int]) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    return [write_atomic(out / svg_name(session, size), [await capture(session, size)])
            for session in sessions]


def _size(text: str) -> tuple[int, int]:
    columns, _, rows = text.partition("x")
    try:
        return int(columns), int(rows)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected COLSxROWS like 80x24, got {text!r}") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.screenshots", description=__doc__)
    parser.add_argument("sessions", nargs="+", type=Path, metavar="SESSION.json")
    parser.add_argument("--out", type=Path, default=Path("screenshots"))
    parser.add_argument("--size", type=_size, default=(80, 24), metavar="COLSxROWS")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    for path in asyncio.run(write_all(args.sessions, args.out, args.size)):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
