"""`--model a,b --trace chat,batch`: each (model, trace) study has its own folder with the
usual report; DIR/report.json and DIR/report.md index them, with every study's checks side by
side and the nodes that ran them."""

from __future__ import annotations

import datetime as dt
import sys

from probe.bench.nodes import nodes_markdown
from probe.common.atomic import write_atomic, write_json_atomic
from probe.common.units import NO_DATA, fmt_s
from probe.runs.plan import BenchSettings
from probe.session_store.tables import table

MATRIX_SCHEMA = "infertop-bench-matrix/1"


def write_index(settings: BenchSettings, cells: list[BenchSettings], reports: list[dict],
                executor: dict, nodes: dict, *, interrupted: bool, wall_s: float) -> None:
    index = {
        "schema": MATRIX_SCHEMA,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "command": "infertop " + " ".join(sys.argv[1:]),
        "executor": executor,
        "studies": [{"model": cell.model, "trace": cell.trace, "dir": cell.out.name,
                     "runs": len(report["runs"]),
                     "failed": sorted(k for k, r in report["runs"].items()
                                      if isinstance(r, dict) and "error" in r),
                     "checks": report["checks"]} for cell, report in zip(cells, reports)],
        "nodes": nodes, "wall_s": wall_s, "incomplete": interrupted,
    }
    write_json_atomic(settings.out / "report.json", index)
    write_atomic(settings.out / "report.md", [render_index(index)])


def render_index(index: dict) -> str:
    rows = []
    for study in index["studies"]:
        checks = [f"{name[:-3]} {'pass' if value else 'FAIL'}"
                  for name, value in study["checks"].items() if name.endswith("_ok")]
        rows.append([study["model"], study["trace"],
                     f"[{study['dir']}/report.md]({study['dir']}/report.md)",
                     str(study["runs"]), str(len(study["failed"])), ", ".join(checks) or NO_DATA])
    out = [f"# infertop bench: {len(rows)} studies", "",
           f"- wall time {fmt_s(index['wall_s'])}"
           + (" — **interrupted: incomplete**" if index.get("incomplete") else ""), "",
           table(["model", "trace", "report", "runs", "failed", "checks"], rows), ""]
    return "\n".join(out + nodes_markdown(index))
