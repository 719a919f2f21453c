"""Number formatting for the report's tables: one place, so a figure reads the same everywhere."""

from __future__ import annotations

from probe.bench.spread import Spread

NA = "n/a"


def num(value: float | None, digits: int = 1, unit: str = "") -> str:
    if value is None:
        return NA
    text = f"{value:,.{digits}f}"
    return f"{text} {unit}".rstrip()


def ms(value: float | None) -> str:
    if value is None:
        return NA
    if abs(value) >= 10_000:
        return f"{value / 1000:,.1f} s"
    return f"{value:,.1f} ms" if abs(value) >= 10 else f"{value:.2f} ms"


def seconds(value: float | None) -> str:
    return NA if value is None else f"{value:,.1f} s"


def pct(fraction: float | None) -> str:
    if fraction is None:
        return NA
    if 0 < abs(fraction) < 0.001:
        return f"{100 * fraction:.3f}%"
    return f"{100 * fraction:.1f}%"


def size(nbytes: float | None) -> str:
    if nbytes is None:
        return NA
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(nbytes) >= scale:
            return f"{nbytes / scale:,.1f} {unit}"
    return f"{nbytes:,.0f} B"


def spread(raw: dict | Spread | None, render=ms) -> str:
    """`12.3 ms (11.9–12.8)`: the median of the repeats, then their range; one repeat alone."""
    value = raw if isinstance(raw, Spread) else Spread.from_dict(raw)
    if value.median is None:
        return NA
    if value.n < 2:
        return render(value.median)
    return f"{render(value.median)} ({_bare(render(value.low))}–{render(value.high)})"


def _bare(text: str) -> str:
    return text.rsplit(" ", 1)[0] if " " in text else text


def ratio(value: float | None) -> str:
    return NA if value is None else f"{value:.2f}×"


def cell(text: object) -> str:
    """A markdown table cell: no pipes, no newlines."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def table(columns: list[str], rows: list[list[object]]) -> str:
    lines = ["| " + " | ".join(cell(c) for c in columns) + " |",
             "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def text_table(columns: list[str], rows: list[list[object]]) -> str:
    """A plain, aligned table for the terminal."""
    cells = [[str(c) for c in columns]] + [[str(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    out = []
    for n, row in enumerate(cells):
        out.append("  ".join(v.ljust(widths[i]) if i == 0 else v.rjust(widths[i])
                             for i, v in enumerate(row)).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)
