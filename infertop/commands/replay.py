"""`infertop replay`: replay a trace headless and save the session. Everything that can be
refused without torch is checked here first; serving and saving are
probe/engine/process/replay_and_save.py."""

from __future__ import annotations

import argparse
import sys

from infertop.commands.engine_args import (
    add_compile_backend_argument,
    add_engine_arguments,
    add_metrics_argument,
    add_slo_argument,
)
from infertop.endings import ending
from probe.checks.bench_checks import check_compile_backend
from probe.checks.engine_inputs import check_engine_inputs
from probe.checks.inductor_cache import usable_inductor_cache
from probe.checks.interrupts import signals_as_interrupt
from probe.checks.output_lock import OutputLock
from probe.checks.ports import check_port_free
from probe.checks.stop_supervisor import run_supervised
from probe.common.argtypes import (
    MAX_CONCURRENCY,
    check_replay_span,
    note_fewer_requests,
    whole_number,
)
from probe.common.atomic import check_output_file
from probe.common.errors import BadInput
from probe.contract.options import parse_opts
from probe.engine.process.third_party_output import third_party_output_to_engine_log
from probe.engine.workload_setup import prepare_workload
from probe.session_store.replay_salvage import salvage_replay

NAME = "replay"
HELP = "replay a trace headless and save the session"


def add_cli_args(parser: argparse.ArgumentParser) -> None:
    add_engine_arguments(parser, default_speed=1.0)
    parser.add_argument("--concurrency", type=whole_number(1, MAX_CONCURRENCY), default=None,
                        metavar="N",
                        help="closed loop: keep N requests outstanding instead of trace times")
    parser.add_argument("--out", required=True, metavar="SNAPSHOT.json")
    parser.add_argument("--tokens", action="store_true",
                        help="keep every request's generated token ids in its record")
    add_compile_backend_argument(parser)
    add_metrics_argument(parser)
    add_slo_argument(parser)


def main(args: argparse.Namespace) -> int:

    # Everything that can be refused without torch is checked before torch is imported.
    options = parse_opts(args.opt)
    check_compile_backend(args.compile_backend)
    check_output_file(args.out, "--out", inputs=(args.trace, args.model))
    check_engine_inputs(args.model, args.device, positions=args.max_input + args.max_output)
    check_port_free(args.metrics_port)
    usable_inductor_cache()     # an unusable TORCHINDUCTOR_CACHE_DIR: one warning, no cache
    # SIGTERM/SIGHUP while the model loads: exit 128+signal, the lock let go (nothing served)
    with signals_as_interrupt(), OutputLock(args.out, "--out"):
        if not getattr(args, "supervised", False):
            return _replay(args, options)
        # the work in a child of its own, so that a stop ends within seconds even while a
        # compile holds it: what its journal holds is then saved by this process
        return run_supervised(lambda note: _replay(args, options, note), ending,
                              lambda stopped: salvage_replay(stopped, args.out))


def _replay(args: argparse.Namespace, options, note=lambda text: None) -> int:

    workload = prepare_workload(args.trace, buckets=args.buckets, max_input=args.max_input,
                                max_output=args.max_output)
    if not args.concurrency:
        served = workload.trace.requests[:args.requests or None]
        check_replay_span(served[0].timestamp_ms, served[-1].timestamp_ms,
                          args.speed or 1.0, f"--trace {args.trace}")
    print(workload.fit.summary(), file=sys.stderr)
    note_fewer_requests(args.requests, len(workload.trace.requests))
    with third_party_output_to_engine_log():
        from probe.engine.process.replay_and_save import serve_replay  # torchao speaks
        return serve_replay(args, options, workload, metrics_exporter, note)


def metrics_exporter(port: int | None, session, queue_depth):
    if port is None:
        return None
    from probe.monitoring.prometheus import PrometheusExporter
    try:
        exporter = PrometheusExporter(session, queue_depth, port=port)
    except OSError as exc:
        raise BadInput(f"--metrics-port {port}: cannot listen on 127.0.0.1:{port} "
                          f"({exc.strerror or exc})") from None
    print(f"metrics: http://127.0.0.1:{exporter.port}/metrics", file=sys.stderr)
    return exporter
