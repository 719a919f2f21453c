"""Write tests/durations.json, each test file's seconds in a run's JUnit XML, so that
tests/conftest.py can queue the longest files first for `make test`'s workers:

    .venv/bin/python -m pytest -n 2 --dist loadgroup --junitxml=/tmp/suite.xml
    .venv/bin/python tests/record_durations.py /tmp/suite.xml "the machine it ran on"

Only the order depends on it: a file it does not name is queued after those it does."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ElementTree
from collections import Counter
from pathlib import Path

DURATIONS = Path(__file__).parent / "durations.json"


def file_seconds(junit_xml: Path) -> dict[str, float]:
    """Seconds per test file (relative to tests/), setup and teardown included."""
    seconds: Counter[str] = Counter()
    for case in ElementTree.parse(junit_xml).iter("testcase"):
        module = case.get("classname", "").removeprefix("tests.")
        # a test class adds its name after the module's: keep the module's
        parts = [p for p in module.split(".") if not p[:1].isupper()]
        seconds["/".join(parts) + ".py"] += float(case.get("time", 0))
    return {name: round(value, 1) for name, value in seconds.most_common()}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: record_durations.py JUNIT_XML MACHINE", file=sys.stderr)
        return 2
    document = {"machine": argv[1], "seconds": file_seconds(Path(argv[0]))}
    DURATIONS.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
