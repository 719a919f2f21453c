"""The single `infertop` entry point. With no sub-command it opens the dashboard; `replay`,
`bench`, `trace …` and `snapshot …` run headless. Heavy imports happen inside each command so
`infertop trace stats` does not pay for torch, nor `replay` for textual."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Sequence

from workloads.argtypes import (
    MAX_CONCURRENCY,
    OneLineParser,
    check_replay_span,
    model_length,
    note_fewer_requests,
    request_count,
    speed_factor,
    thread_count,
    whole_number,
)
from workloads.terminal_text import terminal_text
from workloads.trace import BUILTIN_TRACES, DEFAULT_TRACE

EXIT_FAILED, EXIT_BAD_INPUT = 1, 2


def _add_metrics_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--metrics-port", type=whole_number(0, 65535), default=None,
                        metavar="N", help="serve Prometheus metrics on 127.0.0.1:N/metrics "
                                          "(0: any free port)")


def _add_slo_argument(parser: argparse.ArgumentParser) -> None:
    from probe.contract.slo import SLO_HELP, slo_argument
    parser.add_argument("--slo", type=slo_argument, default=None, metavar="BOUNDS",
                        help=SLO_HELP)


def _add_engine_arguments(parser: argparse.ArgumentParser, *,
                          default_speed: float | None) -> None:
    parser.add_argument("--model", default="t5-small",
                        help="a preset (t5-small, t5-tiny) or a local T5 checkpoint folder "
                             "(offline: config + safetensors)")
    parser.add_argument("--trace", default=DEFAULT_TRACE,
                        help=f"a built-in trace ({', '.join(BUILTIN_TRACES)}; default "
                             f"{DEFAULT_TRACE}: real production traffic) or a .jsonl/.csv file")
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda[:N]")
    parser.add_argument("--opt", action="append", default=[], metavar="KEY=VALUE",
                        help="an optimization setting, e.g. compile=default (repeatable)")
    parser.add_argument("--buckets", default=None, metavar="EDGES",
                        help="bucket edges, e.g. 64,128,256 (default: the planner's best 4)")
    parser.add_argument("--speed", type=speed_factor, default=default_speed,
                        help="replay speed factor (default: " + (
                            f"{default_speed:g})" if default_speed else
                            "measure the engine's capacity and offer half of it)"))
    parser.add_argument("--requests", type=request_count, default=None, metavar="N",
                        help="stop after N requests")
    parser.add_argument("--threads", type=thread_count, default=None, metavar="N",
                        help="torch threads for the engine (default: torch's; the dashboard "
                             "leaves one core to itself)")
    parser.add_argument("--max-input", type=model_length, default=512,
                        help="longest input (default 512)")
    parser.add_argument("--max-output", type=model_length, default=512,
                        help="longest output (default 512)")


def build_parser() -> argparse.ArgumentParser:
    from workloads import trace_commands as trace_cli

    parser = OneLineParser(
        prog="infertop",
        description="Watch what each inference optimization does to a T5 pipeline under real "
                    "traffic. With no command, opens the dashboard.")
    _add_engine_arguments(parser, default_speed=None)
    _add_metrics_argument(parser)
    _add_slo_argument(parser)
    parser.add_argument("--snapshot-dir", default="snapshots", help="where `s` saves snapshots")
    parser.add_argument("--torch-trace", action="store_true",
                        help="keep a TORCH_TRACE of the session (for tlparse) in the snapshot "
                             "folder")
    parser.add_argument("--load", default=None, metavar="SNAPSHOT.json",
                        help="reopen a saved session read-only")
    parser.set_defaults(func=_dashboard)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    replay = commands.add_parser("replay", help="replay a trace headless and save the session")
    _add_engine_arguments(replay, default_speed=1.0)
    replay.add_argument("--concurrency", type=whole_number(1, MAX_CONCURRENCY), default=None,
                        metavar="N",
                        help="closed loop: keep N requests outstanding instead of trace times")
    replay.add_argument("--out", required=True, metavar="SNAPSHOT.json")
    replay.add_argument("--tokens", action="store_true",
                        help="keep every request's generated token ids in its record")
    _add_metrics_argument(replay)
    _add_slo_argument(replay)
    replay.set_defaults(func=_replay)

    from probe.bench.command import register as register_bench
    register_bench(commands)
    from probe.tune.command import register as register_tune
    register_tune(commands)
    trace_cli.register(commands)
    from infertop.doctor import register as register_doctor
    register_doctor(commands)

    snapshot = commands.add_parser("snapshot", help="inspect saved sessions")
    snapshot_commands = snapshot.add_subparsers(dest="snapshot_command", required=True,
                                                metavar="{show,compare,export,recover}")
    show = snapshot_commands.add_parser("show", help="a saved session's segments as a table")
    show.add_argument("file", metavar="FILE")
    show.add_argument("--plot", default=None, metavar="OUT.svg",
                      help="also draw its per-request latency timeline (.svg or .png; needs "
                           "pip install 'infertop[plots]')")
    show.set_defaults(func=_snapshot_show)
    compare = snapshot_commands.add_parser("compare", help="per-metric deltas between sessions")
    compare.add_argument("a", metavar="A", help="a session JSON, or FILE:cN for one config")
    compare.add_argument("b", metavar="B", help="a session JSON, or FILE:cN for one config")
    compare.add_argument("--plot", default=None, metavar="OUT.svg",
                         help="also draw each config's latency CDF on one axis (.svg or .png; "
                              "needs pip install 'infertop[plots]')")
    compare.set_defaults(func=_snapshot_compare)
    export = snapshot_commands.add_parser(
        "export", help="a saved session's records and segments as CSV or Parquet (pandas)")
    export.add_argument("file", metavar="FILE")
    kind = export.add_mutually_exclusive_group(required=True)
    kind.add_argument("--csv", dest="format", action="store_const", const="csv")
    kind.add_argument("--parquet", dest="format", action="store_const", const="parquet")
    export.add_argument("-o", "--out", default=None, metavar="STEM",
                        help="writes STEM.requests.EXT and STEM.segments.EXT (default: FILE "
                             "without .json)")
    export.set_defaults(func=_snapshot_export)
    recover = snapshot_commands.add_parser(
        "recover", help="write the session JSON of a run that died, from its journal")
    recover.add_argument("journal", metavar="JOURNAL")
    recover.add_argument("-o", "--out", required=True, metavar="SNAPSHOT.json")
    recover.set_defaults(func=_snapshot_recover)
    return parser


def _dashboard(args: argparse.Namespace) -> int:
    from tui.launch import launch
    return launch(args)


def _replay(args: argparse.Namespace) -> int:
    from probe.contract.engine_inputs import check_engine_inputs
    from probe.contract.interrupts import signals_as_interrupt
    from probe.contract.options import parse_opts
    from probe.contract.output_lock import OutputLock
    from probe.contract.ports import check_port_free
    from probe.engine.workload_setup import prepare_workload
    from workloads.atomic import check_output_file

    # Everything that can be refused without torch is checked before torch is imported.
    options = parse_opts(args.opt)
    check_output_file(args.out, "--out", inputs=(args.trace, args.model))
    check_engine_inputs(args.model, args.device, positions=args.max_input + args.max_output)
    check_port_free(args.metrics_port)
    # SIGTERM/SIGHUP while the model loads: exit 128+signal, the lock let go (nothing served)
    with signals_as_interrupt(), OutputLock(args.out, "--out"):
        workload = prepare_workload(args.trace, buckets=args.buckets, max_input=args.max_input,
                                    max_output=args.max_output)
        if not args.concurrency:
            served = workload.trace.requests[:args.requests or None]
            check_replay_span(served[0].timestamp_ms, served[-1].timestamp_ms,
                              args.speed or 1.0, f"--trace {args.trace}")
        print(workload.fit.summary(), file=sys.stderr)
        note_fewer_requests(args.requests, len(workload.trace.requests))
        from probe.engine.process.replay_command import serve_replay
        from probe.engine.process.third_party_output import third_party_output_to_engine_log
        with third_party_output_to_engine_log():
            return serve_replay(args, options, workload, _metrics_exporter)


def _metrics_exporter(port: int | None, session, queue_depth):
    if port is None:
        return None
    from probe.contract.errors import ConfigError
    from probe.monitoring.prometheus import PrometheusExporter
    try:
        exporter = PrometheusExporter(session, queue_depth, port=port)
    except OSError as exc:
        raise ConfigError(f"--metrics-port {port}: cannot listen on 127.0.0.1:{port} "
                          f"({exc.strerror or exc})") from None
    print(f"metrics: http://127.0.0.1:{exporter.port}/metrics", file=sys.stderr)
    return exporter


def _snapshot_export(args: argparse.Namespace) -> int:
    from probe.contract.snapshot_export import export
    stem = args.out or str(Path(args.file).with_suffix(""))
    for path in export(args.file, stem, args.format):
        print(f"wrote {terminal_text(path)}")
    return 0


def _snapshot_recover(args: argparse.Namespace) -> int:
    from probe.contract.recover import recover
    print(recover(args.journal, args.out))
    return 0


def _snapshot_show(args: argparse.Namespace) -> int:
    from probe.contract.snapshot_report import show
    _check_plot(args.plot)
    print(terminal_text(show(args.file), keep_newlines=True))
    if args.plot:
        from probe.report_charts.snapshot_plots import plot_show
        print(f"wrote {terminal_text(str(plot_show(args.file, args.plot)))}")
    return 0


def _snapshot_compare(args: argparse.Namespace) -> int:
    from probe.contract.snapshot_report import compare
    _check_plot(args.plot)
    print(terminal_text(compare(args.a, args.b), keep_newlines=True))
    if args.plot:
        from probe.report_charts.snapshot_plots import plot_compare
        print(f"wrote {terminal_text(str(plot_compare(args.a, args.b, args.plot)))}")
    return 0


def _check_plot(out: str | None) -> None:
    """--plot is refused before anything is read: its suffix, its folder, matplotlib."""
    if out is None:
        return
    from probe.contract.errors import ConfigError
    from probe.report_charts.canvas import require_matplotlib
    from workloads.atomic import check_output_file
    if Path(out).suffix.lower() not in (".svg", ".png"):
        raise ConfigError(f"--plot {out}: a chart is written as .svg or .png")
    check_output_file(out, "--plot")
    require_matplotlib()


def main(argv: Sequence[str] | None = None) -> int:
    from probe.contract.errors import ConfigError
    from probe.contract.interrupts import Interrupted, exit_status, signal_of
    from workloads.errors import TraceError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status = args.func(args)
        sys.stdout.flush()      # here, where a closed pipe is still ours to handle
        return status
    except BrokenPipeError:
        return closed_pipe()
    except (ConfigError, TraceError) as exc:
        print(f"infertop: error: {terminal_text(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:      # a full disk, an I/O error: said, never a traceback
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"infertop: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt as exc:
        if isinstance(exc, Interrupted):    # Ctrl-C needs no words; a SIGTERM from afar does
            print(f"infertop: stopped by {exc}", file=sys.stderr)
        return exit_status(signal_of(exc))


def closed_pipe() -> int:
    """`infertop … | head`: the reader has what it wanted. End quietly, as coreutils do;
    stdout goes to /dev/null so the interpreter's own flush at exit finds nothing to say."""
    try:
        stdout = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):   # not a file (a test's capture)
        return 0
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, stdout)
    os.close(devnull)
    return 0


if __name__ == "__main__":
    sys.exit(main())
