"""`infertop serve`: the engine `replay` feeds, behind an OpenAI-compatible HTTP endpoint;
every request it serves is journaled and saved to --out as a session. Everything that can be
refused without torch is checked here first; serving is probe/server/run.py."""

from __future__ import annotations

import argparse
import os
import sys

from infertop.commands.engine_args import (
    add_compile_backend_argument,
    add_engine_arguments,
    add_slo_argument,
)
from probe.checks.bench_checks import check_compile_backend
from probe.checks.engine_inputs import check_engine_inputs
from probe.checks.inductor_cache import usable_inductor_cache
from probe.checks.interrupts import signals_as_interrupt
from probe.checks.output_lock import OutputLock
from probe.common.argtypes import real_number, whole_number
from probe.common.atomic import check_output_file
from probe.contract.options import parse_opts
from probe.engine.process.third_party_output import third_party_output_to_engine_log
from probe.engine.workload_setup import prepare_workload
from probe.server.from_file import read_start
from probe.server.ray_serve import replica_path, require_serve, serve_ray

NAME = "serve"
HELP = "serve a configuration behind an OpenAI-compatible HTTP API, saving the session"
API_KEY_ENV = "INFERTOP_API_KEY"


def add_cli_args(parser: argparse.ArgumentParser) -> None:
    add_engine_arguments(parser, default_speed=None, replaying=False)
    parser.add_argument("--out", required=True, metavar="SNAPSHOT.json",
                        help="the session of every request served, written on exit")
    parser.add_argument("--from", dest="from_file", default=None, metavar="FILE",
                        help="start from the config a tune.json chose, or a session's last "
                             "served config (--opt then changes it)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to bind (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=whole_number(0, 65535), default=8000,
                        help="port (default 8000)")
    parser.add_argument("--drain-s", type=real_number(0.0, 3600.0), default=30.0,
                        metavar="S", help="on SIGTERM, how long the requests held may take "
                                          "to finish (default 30)")
    parser.add_argument("--max-queue", type=whole_number(0, 1_000_000), default=64,
                        metavar="N", help="requests waiting beyond which a request gets 429 "
                                          "(default 64)")
    parser.add_argument("--api-key", default=None, metavar="KEY",
                        help=f"require `Authorization: Bearer KEY` on every endpoint but "
                             f"/health (default: ${API_KEY_ENV} if set)")
    parser.add_argument("--ray", type=whole_number(1, 64), default=None, metavar="N",
                        help="serve through Ray Serve, N replicas on this machine, each its "
                             "own engine, saving its session to --out's name with .rK "
                             "(S.r0.json, …); needs infertop[serve-ray]")
    add_compile_backend_argument(parser)
    add_slo_argument(parser)


def main(args: argparse.Namespace) -> int:
    # Everything that can be refused without torch is checked before torch is imported.
    if args.from_file is not None:
        start = read_start(args.from_file)
        options = parse_opts(args.opt, base=start.options)
        if "max_batch" in start.settings and not args.max_batch:
            args.max_batch = int(start.settings["max_batch"])
        if "batch_window_ms" in start.settings and args.batch_window is None:
            args.batch_window = float(start.settings["batch_window_ms"])
        print(f"--from {args.from_file}: {start.said}", file=sys.stderr)
    else:
        options = parse_opts(args.opt)
    args.api_key = args.api_key or os.environ.get(API_KEY_ENV) or None
    check_compile_backend(args.compile_backend)
    check_output_file(args.out, "--out", inputs=(args.trace, args.model))
    if args.ray is not None:
        require_serve()
        for index in range(args.ray):
            check_output_file(replica_path(args.out, index), "--out",
                              inputs=(args.trace, args.model))
    check_engine_inputs(args.model, args.device, positions=args.max_input + args.max_output)
    usable_inductor_cache()
    with signals_as_interrupt(), OutputLock(args.out, "--out"):
        workload = prepare_workload(args.trace, buckets=args.buckets, max_input=args.max_input,
                                    max_output=args.max_output)
        with third_party_output_to_engine_log() as log:
            if args.ray is not None:
                return serve_ray(args, options, workload)
            from probe.server.run import serve, uvicorn_logs_to  # uvicorn: half a second
            with uvicorn_logs_to(log):
                return serve(args, options, workload)

