"""The single `infertop` entry point. With no sub-command it opens the dashboard; `replay`,
`bench`, `trace …` and `snapshot …` run headless. Heavy imports happen inside each command so
`infertop trace stats` does not pay for torch, nor `replay` for textual."""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from workloads.argtypes import (OneLineParser, note_fewer_requests, real_number, thread_count,
                                whole_number)
from workloads.rows import MAX_LENGTH

EXIT_BAD_INPUT = 2


def _add_engine_arguments(parser: argparse.ArgumentParser, *, default_speed: float) -> None:
    parser.add_argument("--model", default="t5-small",
                        help="a preset (t5-small, t5-tiny) or a local T5 checkpoint folder "
                             "(offline: config + safetensors)")
    parser.add_argument("--trace", default="chat",
                        help="a built-in trace (chat, summarize, translate, batch) or a "
                             ".jsonl/.csv file")
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda[:N]")
    parser.add_argument("--opt", action="append", default=[], metavar="KEY=VALUE",
                        help="an optimization setting, e.g. compile=default (repeatable)")
    parser.add_argument("--buckets", default=None, metavar="EDGES",
                        help="bucket edges, e.g. 64,128,256 (default: the planner's best 4)")
    parser.add_argument("--speed", type=real_number(0.0), default=default_speed,
                        help=f"replay speed factor (default {default_speed:g})")
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
    from workloads import cli as trace_cli

    parser = OneLineParser(
        prog="infertop",
        description="Watch what each inference optimization does to a T5 pipeline under real "
                    "traffic. With no command, opens the dashboard.")
    _add_engine_arguments(parser, default_speed=1.0)
    parser.add_argument("--snapshot-dir", default="snapshots", help="where `s` saves snapshots")
    parser.add_argument("--load", default=None, metavar="SNAPSHOT.json",
                        help="reopen a saved session read-only")
    parser.set_defaults(func=_dashboard)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    replay = commands.add_parser("replay", help="replay a trace headless and save the session")
    _add_engine_arguments(replay, default_speed=1.0)
    replay.add_argument("--concurrency", type=whole_number(1), default=None, metavar="N",
                        help="closed loop: keep N requests outstanding instead of trace times")
    replay.add_argument("--out", required=True, metavar="SNAPSHOT.json")
    replay.set_defaults(func=_replay)

    from probe.bench.cli import register as register_bench
    register_bench(commands)
    trace_cli.register(commands)

    snapshot = commands.add_parser("snapshot", help="inspect saved sessions")
    snapshot_commands = snapshot.add_subparsers(dest="snapshot_command", required=True,
                                                metavar="{show,compare}")
    show = snapshot_commands.add_parser("show", help="a saved session's segments as a table")
    show.add_argument("file", metavar="FILE")
    show.set_defaults(func=_snapshot_show)
    compare = snapshot_commands.add_parser("compare", help="per-metric deltas between sessions")
    compare.add_argument("a", metavar="A")
    compare.add_argument("b", metavar="B")
    compare.set_defaults(func=_snapshot_compare)
    return parser


def _dashboard(args: argparse.Namespace) -> int:
    from tui.launch import launch
    return launch(args)


def _replay(args: argparse.Namespace) -> int:
    from probe.options import parse_opts
    from probe.workload_setup import prepare_workload
    from workloads.atomic import check_output_file

    # Everything that can be refused without torch is checked before torch is imported.
    options = parse_opts(args.opt)
    check_output_file(args.out, "--out", make_folders=True)
    workload = prepare_workload(args.trace, buckets=args.buckets, max_input=args.max_input,
                                max_output=args.max_output)
    print(workload.fit.summary(), file=sys.stderr)
    note_fewer_requests(args.requests, len(workload.trace.requests))

    from probe.headless import document_for, engine_for, run_replay
    from probe.snapshot import write_json_atomic

    engine = engine_for(workload, model=args.model, device=args.device, options=options,
                        max_input=args.max_input, threads=args.threads)

    def progress(records) -> None:
        for record in records:
            status = record.error or f"{record.latency_ms:9.1f} ms"
            print(f"{record.id:>16} {record.config_id} in={record.input_tokens:<4} "
                  f"out={record.output_tokens:<4} stall={record.compile_stall_ms:8.1f} ms "
                  f"{status}", file=sys.stderr)

    run_replay(engine, workload, speed=args.speed, max_requests=args.requests,
               concurrency=args.concurrency, on_records=progress)
    path = write_json_atomic(args.out, document_for(engine, workload, args.trace))
    engine.close()
    print(f"wrote {path}")
    return 0


def _snapshot_show(args: argparse.Namespace) -> int:
    from probe.snapshot_report import show
    print(show(args.file))
    return 0


def _snapshot_compare(args: argparse.Namespace) -> int:
    from probe.snapshot_report import compare
    print(compare(args.a, args.b))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    from probe.errors import ConfigError
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
