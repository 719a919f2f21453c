"""The single `infertop` entry point. With no sub-command it opens the dashboard; `replay`,
`bench`, `trace …` and `snapshot …` run headless. Heavy imports happen inside each command so
`infertop trace stats` does not pay for torch, nor `replay` for textual."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from workloads.argtypes import (
    OneLineParser,
    note_fewer_requests,
    real_number,
    thread_count,
    whole_number,
)
from workloads.rows import MAX_LENGTH
from workloads.trace import BUILTIN_TRACES, DEFAULT_TRACE

EXIT_BAD_INPUT = 2


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
    parser.add_argument("--speed", type=real_number(0.0), default=default_speed,
                        help="replay speed factor (default: " + (
                            f"{default_speed:g})" if default_speed else
                            "measure the engine's capacity and offer half of it)"))
    parser.add_argument("--requests", type=whole_number(1), default=None, metavar="N",
                        help="stop after N requests")
    parser.add_argument("--threads", type=thread_count, default=None, metavar="N",
                        help="torch threads for the engine (default: torch's; the dashboard "
                             "leaves one core to itself)")
    parser.add_argument("--max-input", type=whole_number(1, MAX_LENGTH), default=512,
                        help="longest input (default 512)")
    parser.add_argument("--max-output", type=whole_number(1, MAX_LENGTH), default=512,
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
    replay.add_argument("--concurrency", type=whole_number(1), default=None, metavar="N",
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

    snapshot = commands.add_parser("snapshot", help="inspect saved sessions")
    snapshot_commands = snapshot.add_subparsers(dest="snapshot_command", required=True,
                                                metavar="{show,compare,export}")
    show = snapshot_commands.add_parser("show", help="a saved session's segments as a table")
    show.add_argument("file", metavar="FILE")
    show.set_defaults(func=_snapshot_show)
    compare = snapshot_commands.add_parser("compare", help="per-metric deltas between sessions")
    compare.add_argument("a", metavar="A")
    compare.add_argument("b", metavar="B")
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
    return parser


def _dashboard(args: argparse.Namespace) -> int:
    from tui.launch import launch
    return launch(args)


def _replay(args: argparse.Namespace) -> int:
    from probe.contract.engine_inputs import check_engine_inputs
    from probe.contract.options import parse_opts
    from probe.engine.workload_setup import prepare_workload
    from workloads.atomic import check_output_file

    # Everything that can be refused without torch is checked before torch is imported.
    options = parse_opts(args.opt)
    check_output_file(args.out, "--out", make_folders=True)
    check_engine_inputs(args.model, args.device)
    workload = prepare_workload(args.trace, buckets=args.buckets, max_input=args.max_input,
                                max_output=args.max_output)
    print(workload.fit.summary(), file=sys.stderr)
    note_fewer_requests(args.requests, len(workload.trace.requests))

    from probe.engine.headless import document_for, engine_for, replay_loop
    from probe.engine.replay_command import progress_line, serve_and_save

    engine = engine_for(workload, model=args.model, device=args.device, options=options,
                        max_input=args.max_input, threads=args.threads,
                        keep_tokens=args.tokens)
    engine.session.set_slo(args.slo)

    def progress(records) -> None:
        for record in records:
            print(progress_line(record), file=sys.stderr)

    loop = replay_loop(engine, workload, speed=args.speed or 1.0, max_requests=args.requests,
                       concurrency=args.concurrency, on_records=progress)
    exporter = _metrics_exporter(args.metrics_port, engine.session, lambda: loop.queue_depth)
    try:
        result = serve_and_save(engine, loop, args.out,
                                lambda: document_for(engine, workload, args.trace))
    finally:
        if exporter is not None:
            exporter.close()
        engine.close()
    return result.exit_status


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
        print(f"wrote {path}")
    return 0


def _snapshot_show(args: argparse.Namespace) -> int:
    from probe.contract.snapshot_report import show
    print(show(args.file))
    return 0


def _snapshot_compare(args: argparse.Namespace) -> int:
    from probe.contract.snapshot_report import compare
    print(compare(args.a, args.b))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    from probe.contract.errors import ConfigError
    from workloads.errors import TraceError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ConfigError, TraceError) as exc:
        print(f"infertop: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
