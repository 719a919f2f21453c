"""`infertop doctor SESSION.json [--json]`: every slow request of a saved session explained by its
cause, the next step, and the production-readiness checklist (probe/analysis/diagnosis.py)."""

from __future__ import annotations

import argparse

from probe.analysis.diagnosis import context_from_document
from probe.analysis.doctor_text import report_text
from probe.analysis.session_diagnosis import diagnose_session
from probe.common.terminal_text import terminal_json, terminal_text
from probe.session_store.snapshot import read_document, saved_live_parts, saved_session

NAME = "doctor"
HELP = "why a saved session's slowest requests were slow, and what to do next"


def add_cli_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="SESSION.json")
    parser.add_argument("--json", action="store_true",
                        help="the diagnosis as JSON ({segments: [...], checklist: [...]})")


def diagnosis_of(path: str):
    document = read_document(path)
    data = saved_session(document, source=f"snapshot {path}")   # the check show and --load make
    return data, diagnose_session(data, context_from_document(
        document, saved_live_parts(document, source=f"snapshot {path}"), saved=path))


def main(args: argparse.Namespace) -> int:
    data, report = diagnosis_of(args.file)
    if args.json:       # C1 and bidi controls as \uXXXX, as every printed line is escaped
        print(terminal_json(report.as_dict(), indent=1))
    else:
        labels = {cid: entry.options.label() for cid, entry in data.configs.items()}
        print(f"{terminal_text(args.file)}\n")
        print(terminal_text(report_text(report, labels), keep_newlines=True))
    return 0
