"""`make charts`: copy the docs' charts out of a real bench folder (its figures/, drawn by the
bench itself) into docs/charts, and say which run they came from.

    python -m tools.docs_charts BENCH_DIR docs/charts"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

# the charts the docs show, when the run drew them (small SVGs: they are committed)
DOCS_CHARTS = ("timeline_E3", "cdf_E1", "padding_waste", "e6_waterfall", "rate_E7", "rate_E8",
               "kv_held_vs_used", "compile_split")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m tools.docs_charts BENCH_DIR DOCS_CHARTS",
              file=sys.stderr)
        return 2
    bench, docs = Path(args[0]), Path(args[1])
    report_path = bench / "report.json"
    if not report_path.is_file():
        print(f"docs_charts: {report_path}: no such file (run the bench first)", file=sys.stderr)
        return 2
    report = json.loads(report_path.read_text(encoding="utf-8"))
    docs.mkdir(parents=True, exist_ok=True)
    for name in DOCS_CHARTS:
        source = bench / "figures" / f"{name}.svg"
        if source.is_file():
            shutil.copyfile(source, docs / source.name)
            print(f"wrote {docs / source.name} ({source.stat().st_size // 1024} KiB)")
    env = report.get("environment", {})
    print(f"from: {report.get('command')} ({report.get('created')}), on {env.get('device')} "
          f"({env.get('device_name')}, {env.get('cpu_count')} CPUs), torch {env.get('torch')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
