"""Two bench studies' verdicts side by side, for checking that a fast study (sequential stopping,
short warm-ups) reaches the verdicts a fixed-size one does:

    python -m tools.verdict_table FAST/report.json FIXED/report.json

prints a markdown table: every verdict in either report's experiment sections (a dict with a
"verdict" key, found by its path), the two verdicts and whether they agree, then the count."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Iterator

DIRECTION = {"faster": "better", "slower": "worse"}     # the three-way reading of a difference


def verdicts(node: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(path, verdict) for every dict under `node` that carries a string "verdict"."""
    if isinstance(node, dict):
        if isinstance(node.get("verdict"), str):
            yield path, node["verdict"]
        for key, value in node.items():
            yield from verdicts(value, f"{path}.{key}" if path else str(key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from verdicts(value, f"{path}[{i}]")


def three_way(verdict: str) -> str:
    """better / worse / no difference: "within noise" and "no difference yet" both say no
    difference was shown."""
    return DIRECTION.get(verdict, "no difference" if verdict in ("within noise", "no difference yet",
                                                             "noise unknown") else verdict)


def table(fast: dict, fixed: dict) -> tuple[list[str], int, int]:
    a = dict(verdicts(fast.get("experiments") or {}))
    b = dict(verdicts(fixed.get("experiments") or {}))
    lines = ["| verdict | fast | fixed | same |", "|---|---|---|---|"]
    same = 0
    for path in dict.fromkeys([*a, *b]):
        left, right = a.get(path, "—"), b.get(path, "—")
        agree = three_way(left) == three_way(right)
        same += agree
        lines.append(f"| `{path}` | {left} | {right} | {'yes' if agree else '**no**'} |")
    return lines, same, len(set(a) | set(b))


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m tools.verdict_table FAST/report.json FIXED/report.json",
              file=sys.stderr)
        return 2
    fast, fixed = (json.loads(Path(p).read_text()) for p in argv)
    lines, same, total = table(fast, fixed)
    print("\n".join(lines))
    print(f"\n{same} of {total} verdicts reach the same better / worse / no difference")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
