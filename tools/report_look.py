"""Open a report.html in headless Chromium and save a screenshot of it, to look at what a
reader's browser shows (every figure drawn, nothing fetched):

    python -m tools.report_look DIR/report.html shot.png [--size 1200x3000]

Needs a Chromium (Debian: `apt-get install chromium`); without one it says so and exits 2."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--no-first-run", "--hide-scrollbars")


def browser() -> str | None:
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)


def screenshot(page: Path, out: Path, *, size: str = "1200x3000", timeout_s: float = 120.0
               ) -> Path:
    """The page as Chromium renders it, `size` (WIDTHxHEIGHT) pixels, into `out` (PNG)."""
    chromium = browser()
    if chromium is None:
        raise FileNotFoundError("no Chromium on PATH (Debian: apt-get install chromium)")
    width, height = size.lower().split("x")
    with tempfile.TemporaryDirectory(prefix="infertop-look-") as profile:
        subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}",
                        f"--screenshot={out.resolve()}", f"--window-size={width},{height}",
                        page.resolve().as_uri()],
                       check=True, capture_output=True, timeout=timeout_s)
    if not out.is_file():
        raise RuntimeError(f"Chromium wrote no screenshot to {out}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.report_look",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("page", type=Path, metavar="REPORT.html")
    parser.add_argument("out", type=Path, metavar="OUT.png")
    parser.add_argument("--size", default="1200x3000", metavar="WIDTHxHEIGHT")
    args = parser.parse_args(argv)
    if not args.page.is_file():
        print(f"look: {args.page}: no such file", file=sys.stderr)
        return 2
    try:
        print(f"wrote {screenshot(args.page, args.out, size=args.size)}")
    except (FileNotFoundError, RuntimeError, ValueError, subprocess.SubprocessError) as exc:
        print(f"look: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
