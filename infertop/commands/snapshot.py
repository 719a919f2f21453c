"""`infertop snapshot show|compare|export|recover|import`: read, compare, export and recover
saved sessions, and import other load generators' result files as sessions."""

from __future__ import annotations

import argparse
from pathlib import Path

from probe.common.atomic import check_output_file
from probe.common.errors import BadInput
from probe.common.terminal_text import terminal_text
from probe.report_charts.canvas import require_matplotlib
from probe.report_charts.snapshot_plots import plot_compare, plot_show
from probe.session_store.peer_imports import import_peer_file
from probe.session_store.recover import recover
from probe.session_store.snapshot_export import export
from probe.session_store.snapshot_report import compare, show

NAME = "snapshot"
HELP = "inspect saved sessions"


def add_cli_args(parser: argparse.ArgumentParser) -> None:
    snapshot_commands = parser.add_subparsers(dest="snapshot_command", required=True,
                                              metavar="{show,compare,export,recover,import}")
    show = snapshot_commands.add_parser("show", help="a saved session's segments as a table")
    show.add_argument("file", metavar="FILE")
    show.add_argument("--plot", default=None, metavar="OUT.svg",
                      help="also draw its per-request latency timeline (.svg or .png; needs "
                           "pip install 'infertop[plots]')")
    compare = snapshot_commands.add_parser("compare", help="per-metric deltas between sessions")
    compare.add_argument("a", metavar="A", help="a session JSON, or FILE:cN for one config")
    compare.add_argument("b", metavar="B", help="a session JSON, or FILE:cN for one config")
    compare.add_argument("--plot", default=None, metavar="OUT.svg",
                         help="also draw each config's latency CDF on one axis (.svg or .png; "
                              "needs pip install 'infertop[plots]')")
    export = snapshot_commands.add_parser(
        "export", help="a saved session's records and segments as CSV or Parquet (pandas)")
    export.add_argument("file", metavar="FILE")
    kind = export.add_mutually_exclusive_group(required=True)
    kind.add_argument("--csv", dest="format", action="store_const", const="csv")
    kind.add_argument("--parquet", dest="format", action="store_const", const="parquet")
    export.add_argument("-o", "--out", default=None, metavar="STEM",
                        help="writes STEM.requests.EXT and STEM.segments.EXT (default: FILE "
                             "without .json)")
    recover = snapshot_commands.add_parser(
        "recover", help="write the session JSON of a run that died, from its journal")
    recover.add_argument("journal", metavar="JOURNAL")
    recover.add_argument("-o", "--out", required=True, metavar="SNAPSHOT.json")
    imported = snapshot_commands.add_parser(
        "import", help="another load generator's results as a session: AIPerf, guidellm, "
                       "vLLM bench serve, inference-perf (docs/peers.md)")
    imported.add_argument("file", metavar="FILE",
                          help="profile_export.jsonl, profile_export_aiperf.json, "
                               "benchmarks.json, a --save-result JSON or "
                               "per_request_lifecycle_metrics.json")
    imported.add_argument("-o", "--out", required=True, metavar="SNAPSHOT.json")


def main(args: argparse.Namespace) -> int:
    return {"show": _show, "compare": _compare, "export": _export,
            "recover": _recover, "import": _import}[args.snapshot_command](args)


def _export(args: argparse.Namespace) -> int:
    stem = args.out or str(Path(args.file).with_suffix(""))
    for path in export(args.file, stem, args.format):
        print(f"wrote {terminal_text(path)}")
    return 0


def _recover(args: argparse.Namespace) -> int:
    print(terminal_text(recover(args.journal, args.out), keep_newlines=True))
    return 0


def _import(args: argparse.Namespace) -> int:
    path, peer = import_peer_file(args.file, args.out)
    requests = sum(len(run.requests) for run in peer.runs)
    kept = f"{requests:,} requests" if peer.per_request else "summary figures only"
    print(f"wrote {terminal_text(str(path))}: {terminal_text(peer.tool)} "
          f"{terminal_text(peer.format)}, {len(peer.runs)} run(s), {kept}")
    return 0


def _show(args: argparse.Namespace) -> int:
    _check_plot(args.plot)
    print(terminal_text(show(args.file), keep_newlines=True))
    if args.plot:
        print(f"wrote {terminal_text(str(plot_show(args.file, args.plot)))}")
    return 0


def _compare(args: argparse.Namespace) -> int:
    _check_plot(args.plot)
    print(terminal_text(compare(args.a, args.b), keep_newlines=True))
    if args.plot:
        print(f"wrote {terminal_text(str(plot_compare(args.a, args.b, args.plot)))}")
    return 0


def _check_plot(out: str | None) -> None:
    """--plot is refused before anything is read: its suffix, its folder, matplotlib."""
    if out is None:
        return
    if Path(out).suffix.lower() not in (".svg", ".png"):
        raise BadInput(f"--plot {out}: a chart is written as .svg or .png")
    check_output_file(out, "--plot")
    require_matplotlib()
