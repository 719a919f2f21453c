"""`infertop doctor SESSION.json [--json] [--verify]`: every slow request of a saved session
explained by its cause, the next step, and the production-readiness checklist
(probe/analysis/diagnosis.py); with --verify, the next step measured against the config it
would replace (probe/tune/verify_step.py)."""

from __future__ import annotations

import argparse
from contextlib import nullcontext
from pathlib import Path

from infertop.endings import ending
from probe.analysis.diagnosis import context_from_document
from probe.analysis.doctor_text import report_text
from probe.analysis.session_diagnosis import diagnose_session
from probe.checks.interrupts import signals_as_interrupt
from probe.checks.output_lock import OutputLock
from probe.checks.stop_supervisor import run_supervised
from probe.common.argtypes import whole_number
from probe.common.atomic import check_output_folder
from probe.common.errors import BadInput
from probe.common.terminal_text import terminal_json, terminal_text
from probe.engine.process.third_party_output import third_party_output_to_engine_log
from probe.session_store.peer_imports.imported_text import imported_header, imported_label
from probe.session_store.snapshot import read_document, saved_live_parts, saved_session
from probe.tune.verify_salvage import runs_folder, salvage_verify
from probe.tune.verify_step import (
    DEFAULT_PASSES,
    DEFAULT_REQUESTS,
    VerifyPlan,
    run_verify,
    say_stderr,
    verify_plan,
    verify_text,
)

NAME = "doctor"
HELP = "why a saved session's slowest requests were slow, and what to do next"


def add_cli_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="SESSION.json")
    parser.add_argument("--json", action="store_true",
                        help="the diagnosis as JSON ({segments: [...], checklist: [...]})")
    parser.add_argument("--verify", action="store_true",
                        help="measure the next step of the current config: replay the "
                             "session's requests through that config and through it with the "
                             "change, alternated on fresh engines, and compare (JSON: verify)")
    parser.add_argument("--verify-requests", type=whole_number(2), default=DEFAULT_REQUESTS,
                        metavar="N", help=f"--verify: the first N recorded requests of that "
                                          f"config (default {DEFAULT_REQUESTS})")
    parser.add_argument("--verify-passes", type=whole_number(1), default=DEFAULT_PASSES,
                        metavar="N", help=f"--verify: runs an arm, each on a fresh engine "
                                          f"(default {DEFAULT_PASSES})")
    parser.add_argument("--verify-runs", default=None, metavar="DIR",
                        help="--verify: keep each run's session in DIR (for snapshot compare; "
                             "DIR is made if its parent exists); by default they are removed")


def diagnosis_of(path: str, document: dict | None = None):
    document = read_document(path) if document is None else document
    data = saved_session(document, source=f"snapshot {path}")   # the check show and --load make
    return data, diagnose_session(data, context_from_document(
        document, saved_live_parts(document, source=f"snapshot {path}"), saved=path))


def main(args: argparse.Namespace) -> int:
    document = read_document(args.file)
    data, report = diagnosis_of(args.file, document)
    if not args.verify:
        _print(args, document, data, report, None)
        return 0
    if imported_header(document):
        raise BadInput(f"doctor --verify {args.file}: an imported session was served by "
                       f"another tool's server, not by an infertop config it could re-serve")
    # every refusal in one line before anything is printed or any model loads: the plan, then
    # --verify-runs by the output rule every command's output follows, and its lock
    plan = verify_plan(args.file, document, data, report, args.verify_requests)
    keep = args.verify_runs
    if keep is not None:
        check_output_folder(keep, "--verify-runs", inputs=(args.file,))
    # a stop while torch loads: exit 128+signal, the lock let go, the temporary folder removed
    with signals_as_interrupt(), \
            (OutputLock(keep, "--verify-runs") if keep is not None else nullcontext()), \
            runs_folder(keep) as runs:
        if not getattr(args, "supervised", False):
            return _verify(args, plan, document, data, report, runs)
        # in a child of its own, as replay and tune: a stop ends within seconds even while a
        # compile holds it (probe/checks/stop_supervisor.py); the folder is this process's
        return run_supervised(lambda note: _verify(args, plan, document, data, report, runs), ending,
                              lambda stopped: salvage_verify(stopped, runs, kept=keep is not None))


def _verify(args: argparse.Namespace, plan: VerifyPlan, document: dict, data, report,
            runs: Path) -> int:
    with third_party_output_to_engine_log():      # torch's and torchao's lines: the log
        verified = run_verify(plan, passes=args.verify_passes, say=say_stderr, runs=runs)
    _print(args, document, data, report, verified)
    return 0


def _print(args: argparse.Namespace, document: dict, data, report, verified) -> None:
    if args.json:       # C1 and bidi controls as \uXXXX, as every printed line is escaped
        out = report.as_dict()
        if verified is not None:
            out["verify"] = verified.as_dict()
        print(terminal_json(out, indent=1))
    else:
        labels = {cid: imported_label(document, cid) or entry.options.label()
                  for cid, entry in data.configs.items()}
        print(terminal_text(args.file))
        print("\n".join(imported_header(document) + [""]))
        print(terminal_text(report_text(report, labels), keep_newlines=True))
        if verified is not None:
            print()
            print(terminal_text(verify_text(verified), keep_newlines=True))
