"""`infertop trace import|generate|stats|from-session`: argparse wiring. Handlers return an
exit status."""

from __future__ import annotations

import argparse
from pathlib import Path

from infertop.endings import ending
from probe.common.argtypes import arrival_rate, real_number, whole_number
from probe.common.atomic import check_output_file
from probe.common.errors import TraceError
from probe.common.terminal_text import terminal_json, terminal_text
from probe.session_store.served_trace import served_trace
from probe.session_store.snapshot import read_document, session_data
from workloads.fitting import POLICIES, fit_to_model
from workloads.generator import PROFILES, generate, write_builtin
from workloads.import_flags import import_flags
from workloads.importers import FORMATS, import_trace
from workloads.rows import MAX_LENGTH
from workloads.trace import BUILTIN_TRACES, GENERATED_TRACES, load_trace_with_report, write_trace
from workloads.trace_stats import format_stats, trace_stats

# requests `trace generate` writes at most: ~16 µs of CPU each here, so ~20 s and 80 MB of
# JSONL (10,000,000 did not finish in 120 s: refused rather than left to run for minutes)
MAX_GENERATED = 1_000_000

token_limit = whole_number(1, MAX_LENGTH)
seed_number = whole_number(0)


NAME = "trace"
HELP = "import, generate and inspect traffic traces"


def add_cli_args(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="trace_command",
                                     metavar="{import,generate,stats,from-session}", required=True)

    imp = commands.add_parser("import", help="convert a public trace (Azure, BurstGPT, mooncake, ShareGPT)")
    imp.add_argument("file", metavar="FILE")
    imp.add_argument("--format", required=True, choices=FORMATS)
    imp.add_argument("-o", "--output", required=True, metavar="OUT.jsonl")
    imp.add_argument("--max-input", type=token_limit, default=512, help="longest input the model serves (default 512)")
    imp.add_argument("--max-output", type=token_limit, default=512, help="longest output (default 512)")
    imp.add_argument("--fit", choices=POLICIES, default="clip", help="how to fit longer requests (default clip)")
    imp.add_argument("--scale-quantile", type=real_number(0.0, 1.0), default=None,
                     help="with --fit scale: the quantile mapped onto the limit (default 1.0 = the longest)")
    imp.add_argument("--rate", type=arrival_rate, default=None,
                     help="ShareGPT only: Poisson arrival rate, rps (default 1.0)")
    imp.add_argument("--seed", type=seed_number, default=None,
                     help="ShareGPT only: seed of the arrivals (default 0)")
    imp.add_argument("--sort", action="store_true", help="sort CSV rows by time first (and say how many moved)")
    imp.add_argument("--integer-ms", action="store_true",
                     help="round timestamps to whole ms (AIPerf's mooncake reader wants integers)")
    _add_skip_bad(imp)

    gen = commands.add_parser("generate", help="write a synthetic trace from a workload profile")
    gen.add_argument("--profile", choices=tuple(PROFILES), help="workload profile")
    gen.add_argument("-n", "--requests", type=whole_number(1, MAX_GENERATED), default=None,
                     help="number of requests (default 2000)")
    gen.add_argument("--seed", type=seed_number, default=0)
    gen.add_argument("--rate", type=arrival_rate, default=None, help="mean arrival rate, rps (default: the profile's)")
    gen.add_argument("-o", "--output", metavar="FILE")
    gen.add_argument("--builtin", action="store_true",
                     help=f"rewrite the generated built-in traces ({', '.join(GENERATED_TRACES)}) "
                          "inside the package")

    stats = commands.add_parser("stats", help="request count, rate, burstiness, lengths, best buckets")
    stats.add_argument("file", metavar="FILE", help=f"a trace file or a built-in name ({', '.join(BUILTIN_TRACES)})")
    stats.add_argument("--buckets", type=int, default=4, metavar="K", help="number of padding buckets (default 4)")
    stats.add_argument("--json", action="store_true", help="print one JSON object")
    stats.add_argument("--format", choices=("native", *FORMATS), default="native",
                       help="read a public trace directly, without fitting (default: infertop's format)")
    _add_skip_bad(stats)

    served = commands.add_parser("from-session",
                                 help="a session's arrivals (e.g. what `serve` served) as a trace")
    served.add_argument("session", metavar="SESSION.json")
    served.add_argument("-o", "--output", "--out", required=True, metavar="OUT.jsonl")


def main(args: argparse.Namespace) -> int:
    handler = {"import": _cmd_import, "generate": _cmd_generate,
               "stats": _cmd_stats, "from-session": _cmd_from_session}[args.trace_command]
    try:
        return handler(args)
    except (TraceError, OSError) as error:  # one line and its status, as the entry point says it
        return ending(error)


def _add_skip_bad(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--skip-bad", action="store_true",
                        help="skip malformed rows, bad lengths and backward timestamps, and count them")


def _cmd_import(args: argparse.Namespace) -> int:
    flags = import_flags(args)   # before anything is read or written
    check_output_file(args.output, "-o", inputs=(args.file,))
    trace, report = import_trace(
        args.format, args.file, skip_bad=args.skip_bad, rate=flags.rate, seed=flags.seed, sort=flags.sort
    )
    fitted, fit = fit_to_model(
        trace, max_input=args.max_input, max_output=args.max_output, policy=args.fit,
        scale_quantile=flags.scale_quantile,
    )
    write_trace(fitted, args.output, integer_ms=args.integer_ms)
    print(f"read {report.rows_read} rows from {terminal_text(args.file)} ({args.format})")
    for line in report.summary_lines():
        print(f"  {terminal_text(line)}")
    print(fit.summary())
    print(f"wrote {len(fitted.requests)} requests over {fitted.duration_s():.1f} s to "
          f"{terminal_text(args.output)}")
    return 0


def _cmd_generate(args: argparse.Namespace) -> int:
    if args.builtin:
        given = [flag for flag, value in (("-o", args.output), ("--profile", args.profile),
                                          ("-n", args.requests), ("--rate", args.rate))
                 if value is not None]
        if given:
            raise TraceError(f"trace generate --builtin rewrites the package's built-in traces "
                             f"with their own settings; {', '.join(given)} cannot apply to it "
                             f"(drop --builtin to write a trace of your own)", skippable=False)
        for path in write_builtin():
            print(f"wrote {terminal_text(path)}")
        return 0
    if not args.profile or not args.output:
        raise TraceError("trace generate: give --profile and -o FILE (or --builtin)", skippable=False)
    check_output_file(args.output, "-o")
    profile = PROFILES[args.profile]
    n = args.requests if args.requests is not None else profile.default_requests
    trace = generate(args.profile, n, args.seed, args.rate)
    write_trace(trace, args.output)
    rate = args.rate if args.rate is not None else profile.default_rate_rps
    print(profile.describe())
    print(f"wrote {n} requests ({rate:g} rps, seed {args.seed}, {trace.duration_s():.1f} s) to "
          f"{terminal_text(args.output)}")
    return 0


def _cmd_stats(args: argparse.Namespace) -> int:
    if args.buckets < 1:  # in the handler: the tests drive it through a plain argparse parser
        raise TraceError(f"--buckets: must be >= 1, got {args.buckets}", skippable=False)
    if args.format == "native":
        trace, report = load_trace_with_report(args.file, skip_bad=args.skip_bad)
    else:
        trace, report = import_trace(args.format, args.file, skip_bad=args.skip_bad)
    stats = trace_stats(trace, buckets=args.buckets)
    if args.json:
        print(terminal_json(stats))
    else:
        print(terminal_text(format_stats(stats, args.buckets), keep_newlines=True))
        for line in report.summary_lines():
            print(f"{'note':<19}{terminal_text(line)}")
    return 0


def _cmd_from_session(args: argparse.Namespace) -> int:
    check_output_file(args.output, "-o", inputs=(args.session,))
    records = session_data(read_document(args.session), args.session).records
    trace, left_out = served_trace(records, Path(args.session).stem)
    if not trace.requests:
        raise TraceError(f"{args.session}: no request was served: nothing to write",
                         skippable=False)
    write_trace(trace, args.output)
    if left_out:
        print(f"left out {left_out} failed request{'s' * (left_out != 1)} (a failed record "
              f"does not keep the tokens it asked for)")
    print(f"wrote {len(trace.requests)} requests over {trace.duration_s():.1f} s to "
          f"{terminal_text(args.output)}")
    return 0
