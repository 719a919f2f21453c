"""An A/B comparison as text, one line a figure: A, B, B − A and its 95% interval, then the
verdict. `doctor --verify` prints it, and the doctor screen shows it for a live A/B."""

from __future__ import annotations

from probe.analysis.ab_compare import Comparison
from probe.common.units import fmt_bytes, fmt_ms, fmt_rate, fmt_s


def figure_text(name: str, value: float | None) -> str:
    if name == "kv_peak_bytes":
        return fmt_bytes(value)
    if name == "goodput_rps":
        return fmt_rate(value, "req/s")
    if name == "compile_s":
        return fmt_s(value)
    return fmt_ms(value)


def signed_text(name: str, value: float | None) -> str:
    if value is None:
        return figure_text(name, value)
    return ("+" if value >= 0 else "−") + figure_text(name, abs(value))


def comparison_lines(c: Comparison) -> list[str]:
    rows = [("", "A", "B", "B − A", "95% interval of B − A")]
    for name, m in c.metrics.items():
        interval = ("— (per engine, not per request)" if m.ci95 is None else
                    f"[{signed_text(name, m.ci95[0])}, {signed_text(name, m.ci95[1])}]")
        rows.append((name, figure_text(name, m.a), figure_text(name, m.b),
                     signed_text(name, m.delta), interval))
    # columns as wide as their widest cell, two spaces apart: "6.96 req/s" fills ten
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ["  " + "  ".join([row[0].ljust(widths[0])]
                              + [row[i].rjust(widths[i]) for i in (1, 2, 3)] + [row[4]])
             for row in rows]
    tell = (f"; about {c.requests_to_tell} requests an arm would tell"
            if c.requests_to_tell is not None else "")
    lines.append(f"  verdict (p95): {c.verdict} ({c.requests_a} requests in A, {c.requests_b} "
                 f"in B){tell}")
    return lines
