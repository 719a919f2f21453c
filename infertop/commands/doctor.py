"""`infertop doctor SESSION.json [--json]`: every slow request of a saved session explained by its
cause, the next step, and the production-readiness checklist (probe/contract/diagnosis.py)."""

from __future__ import annotations

import argparse
import json

NAME = "doctor"
HELP = "why a saved session's slowest requests were slow, and what to do next"


def add_cli_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="SESSION.json")
    parser.add_argument("--json", action="store_true",
                        help="the diagnosis as JSON ({segments: [...], checklist: [...]})")


def diagnosis_of(path: str):
    from probe.contract.diagnosis import context_from_document, diagnose_session
    from probe.session_store.snapshot import read_document, saved_live_parts, session_data
    document = read_document(path)
    data = session_data(document, source=f"snapshot {path}")
    return data, diagnose_session(data, context_from_document(
        document, saved_live_parts(document, source=f"snapshot {path}"), saved=path))


def main(args: argparse.Namespace) -> int:
    from probe.contract.doctor_text import report_text
    data, report = diagnosis_of(args.file)
    if args.json:
        print(json.dumps(report.as_dict(), indent=1, ensure_ascii=False))
    else:
        labels = {cid: entry.options.label() for cid, entry in data.configs.items()}
        print(f"{args.file}\n")
        print(report_text(report, labels))
    return 0
