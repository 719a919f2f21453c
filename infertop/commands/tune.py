"""`infertop tune`: argparse wiring and the checks that need no torch; the search itself
(probe/tune/runner.py) is imported when it runs."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import NoReturn

from infertop.commands.bench import add_slo_arguments
from infertop.commands.engine_args import add_compile_backend_argument
from infertop.endings import ending
from probe.checks.engine_inputs import check_engine_inputs
from probe.checks.inductor_cache import usable_inductor_cache
from probe.checks.output_lock import OutputLock
from probe.checks.stop_supervisor import run_supervised
from probe.common.argtypes import OneLineParser, byte_size, real_number, thread_count, whole_number
from probe.common.atomic import check_output_folder
from probe.common.errors import BadInput
from probe.contract.options import parse_opts
from probe.engine.process.third_party_output import third_party_output_to_engine_log
from probe.runs.cluster import require_ray
from probe.tune.runner import run_tune_command
from probe.tune.salvage import salvage_tune
from probe.tune.saved_search import saved_search
from probe.tune.space import check_space, dimensions
from probe.tune.trials import FIGURES
from workloads.trace import DEFAULT_TRACE

DEFAULT_REQUESTS, DEFAULT_REPEATS, DEFAULT_BUDGET_MIN = 24, 2, 30.0
DEFAULT_MAX_DRIFT = 0.05
DEFAULT_TRIALS = 12
SEARCHES = ("greedy", "quick", "exhaustive")


NAME = "tune"
HELP = ("search the optimizations, one change at a time, for the config with the most goodput "
        "under an SLO on your traffic")


def add_cli_args(parser: argparse.ArgumentParser) -> None:
    tune = parser
    tune.add_argument("--model", default="t5-small", help="a preset or a local T5 checkpoint")
    tune.add_argument("--trace", default=DEFAULT_TRACE, help="a built-in trace or a file")
    tune.add_argument("--device", default="auto")
    add_slo_arguments(tune)
    # not required here: `--resume DIR` takes them from DIR/tune.json (main checks them)
    load = tune.add_mutually_exclusive_group()
    load.add_argument("--rate", type=real_number(0.0), default=None, metavar="R",
                      help="offered rate, req/s (open loop): goodput at it is the figure")
    load.add_argument("--find-capacity", action="store_true",
                      help="the figure is capacity at the SLO: the highest rate keeping "
                           "attainment >= --slo-target, searched per config")
    tune.add_argument("--opt", action="append", default=[], metavar="KEY=VALUE",
                      help="the baseline's options (repeatable; default: every option off)")
    tune.add_argument("--requests", type=whole_number(2), default=DEFAULT_REQUESTS, metavar="N",
                      help=f"requests per run (default {DEFAULT_REQUESTS})")
    tune.add_argument("--repeats", type=whole_number(1), default=DEFAULT_REPEATS,
                      help=f"runs per config at the rate, for the noise (default "
                           f"{DEFAULT_REPEATS})")
    tune.add_argument("--budget", type=real_number(0.0), default=DEFAULT_BUDGET_MIN,
                      metavar="MIN", help=f"minutes to spend (default {DEFAULT_BUDGET_MIN:g}); "
                                          "the baseline always runs")
    tune.add_argument("--max-drift", type=real_number(0.0, 1.0), default=DEFAULT_MAX_DRIFT,
                      metavar="X", help="most tokens a precision or quantization change may "
                                        "make differ from fp32 eager (default "
                                        f"{DEFAULT_MAX_DRIFT:g})")
    tune.add_argument("--threads", type=thread_count, default=None)
    add_compile_backend_argument(tune)
    tune.add_argument("--ray", nargs="?", const="", default=None, metavar="local|ADDRESS",
                      help="measure candidates in parallel, one per node slot of a Ray "
                           "cluster (local: start one here): greedy, one step's at once; "
                           "quick and exhaustive, a trial per slot, each merged as it ends")
    tune.add_argument("--search", choices=SEARCHES, default="greedy",
                      help="greedy (default): one change at a time, kept only if it wins "
                           "alone; quick: --trials combinations chosen by Optuna, the greedy "
                           "path's first; exhaustive: every combination of the space")
    tune.add_argument("--trials", type=whole_number(1), default=DEFAULT_TRIALS, metavar="N",
                      help=f"--search quick: trials besides the default (default "
                           f"{DEFAULT_TRIALS})")
    tune.add_argument("--objective", type=_objectives, default=("goodput",),
                      metavar="goodput|tokens|p95|energy[,…]",
                      help="what --search quick|exhaustive maximizes (p95, and energy: "
                           "joules per good token, minimizes); several: Optuna's NSGA-II, "
                           "the first chooses the final config")
    tune.add_argument("--space", type=lambda text: tuple(k.strip() for k in text.split(",")
                                                         if k.strip()),
                      default=(), metavar="KEY,…",
                      help="--search quick|exhaustive: only these options and settings "
                           "(bucket_count, max_batch, batch_window_ms; one may name its own "
                           "values, bucket_count=2/4/8) (default: every option that changes "
                           "a warm run on the device, and the settings at their ladders)")
    tune.add_argument("--max-memory", type=byte_size, default=None, metavar="BYTES",
                      help="a trial whose peak KV cache bytes pass this misses a constraint")
    tune.add_argument("--amortize", type=whole_number(1), default=None, metavar="N",
                      help="a trial whose compile seconds are not paid back within N requests "
                           "by its per-request saving against the default misses a constraint")
    tune.add_argument("--max-joules-per-token", type=real_number(0.0), default=None,
                      metavar="J",
                      help="a trial whose joules per good token (energy over the tokens of "
                           "requests that met the SLO) pass J misses a constraint")
    tune.add_argument("--confirm", action="store_true",
                      help="--search quick|exhaustive at a --rate: after the search, replay "
                           "the chosen config, each of its changes alone and the default, "
                           "alternated, --repeats times each, and say whether the combination "
                           "beats every part beyond the noise (tune.json's confirmation)")
    tune.add_argument("--out", default=None, metavar="DIR")
    tune.add_argument("--resume", default=None, metavar="DIR",
                      help="continue the --search quick|exhaustive stopped in DIR, with its "
                           "flags, without measuring a finished trial again")


def _objectives(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    wrong = [n for n in names if n not in FIGURES]
    if not names or wrong:
        raise argparse.ArgumentTypeError(f"{text!r}: choose from {', '.join(FIGURES)}")
    return names


class _ResumedParser(OneLineParser):
    """The saved command line's parser: a flag it does not take is the file's fault, one
    line naming it (not argparse's usage)."""

    def __init__(self, where: str) -> None:
        super().__init__(prog="infertop tune", add_help=False)
        self.where = where

    def error(self, message: str) -> NoReturn:
        raise BadInput(f"{self.where}: settings.argv: {message}")


def resumed(args: argparse.Namespace) -> argparse.Namespace:
    """The flags of the search stopped in --resume DIR, read from its tune.json (every field
    checked, its trials included: probe/tune/saved_search.py)."""
    saved = saved_search(args.resume)
    argv = list(saved.argv)
    parser = _ResumedParser(f"--resume {args.resume}: {Path(args.resume) / 'tune.json'}")
    add_cli_args(parser)
    again = parser.parse_args(argv[1:] if argv[:1] == ["tune"] else argv)
    again.search, again.out, again.resume = saved.mode, args.resume, args.resume
    again.supervised = getattr(args, "supervised", False)
    again.argv = argv
    return again


def main(args: argparse.Namespace) -> int:

    if args.resume is not None:
        args = resumed(args)
    if args.out is None:
        raise BadInput("tune: --out DIR is required (or --resume DIR)")
    if args.rate is None and not args.find_capacity:
        raise BadInput("tune: one of the arguments --rate --find-capacity is required")
    if args.search == "greedy" and (args.max_joules_per_token is not None
                                    or args.objective != ("goodput",)):
        raise BadInput("tune: --objective and --max-joules-per-token are for --search "
                       "quick|exhaustive; greedy judges goodput alone")
    if args.confirm and (args.search == "greedy" or args.find_capacity):
        raise BadInput("tune: --confirm is for --search quick|exhaustive at a --rate (it "
                       "replays the chosen config and its parts at that rate)")
    if args.slo is None:
        raise BadInput("tune: --slo is required (the objective goodput is measured against), "
                          "e.g. --slo ttft=1s,latency=8s")
    if args.ray is not None:
        require_ray()                   # not installed: one line, before the model loads
    baseline = parse_opts(args.opt)
    if args.search != "greedy":   # a bad --space is one line before the model loads
        check_space(baseline, dimensions(args.device, args.space))
    check_output_folder(args.out, "--out")
    check_engine_inputs(args.model, args.device)
    usable_inductor_cache()
    # one tune per --out, as replay and bench hold theirs; Ray's, torch's output: the log
    with OutputLock(args.out, "--out"):
        if not getattr(args, "supervised", False):
            return _tune(args, baseline)
        # the search in a child of its own, so that a stop ends within seconds even while a
        # compile holds it (probe/checks/stop_supervisor.py)
        return run_supervised(lambda note: _tune(args, baseline), ending,
                              lambda stopped: salvage_tune(stopped, args.out))


def _tune(args: argparse.Namespace, baseline) -> int:
    with third_party_output_to_engine_log():
        return run_tune_command(args, baseline)
