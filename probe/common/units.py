"""How every number reads, on screen and in the reports: one place for units, rounding and
missing values, so a figure reads the same in the dashboard, `snapshot show` and the bench.

"—" means "no data yet" (no request finished); "N/A" means "this machine cannot tell"
(no NVML, no power sensor). Callers choose which with `missing`.
"""

from __future__ import annotations

NO_DATA = "—"
NOT_AVAILABLE = "N/A"

_BINARY_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def fmt_bytes(value: int | float | None, missing: str = NOT_AVAILABLE) -> str:
    """1536 → "1.5 KiB"; three significant digits, binary units as device memory is sized."""
    if value is None:
        return missing
    size = float(value)
    sign = "-" if size < 0 else ""
    size = abs(size)
    for unit in _BINARY_UNITS:
        if size < 1023.5 or unit == _BINARY_UNITS[-1]:
            if unit == "B":
                return f"{sign}{int(size)} B"
            return f"{sign}{_three_digits(size)} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def _three_digits(value: float) -> str:
    if value >= 99.95:
        return f"{value:.0f}"
    if value >= 9.995:
        return f"{value:.1f}"
    return f"{value:.2f}"


def fmt_ms(value: float | None, missing: str = NO_DATA) -> str:
    """A duration given in ms: "812 ms", "9.6 ms", "1.92 s", "62.0 s", "123 s"; under 0.1 ms
    in µs ("35 µs", "4.2 µs")."""
    if value is None:
        return missing
    if 0 < value < 0.0995:      # "0.0 ms" would read as nothing: a t5-tiny step's roofline
        return f"{value * 1000:.2g} µs" if value >= 0.0001 else "<0.1 µs"
    if value < 9.95:
        return f"{value:.1f} ms"
    if value < 999.5:
        return f"{value:.0f} ms"
    return f"{_three_digits(value / 1000)} s"


def fmt_us(value: float | None, missing: str = NO_DATA) -> str:
    """A duration given in µs: "85 µs", "502 µs", "1.2 ms"."""
    if value is None:
        return missing
    return f"{value:.0f} µs" if value < 999.5 else fmt_ms(value / 1000.0)


def fmt_s(value: float | None, missing: str = NO_DATA) -> str:
    """A duration given in seconds."""
    return missing if value is None else fmt_ms(value * 1000.0)


def _decimals(magnitude: float) -> int:
    """Decimals that leave three significant digits up to 999: 2 under 10, 1 under 100."""
    return 2 if magnitude < 10 else (1 if magnitude < 100 else 0)


def fmt_rate(value: float | None, unit: str, missing: str = NO_DATA) -> str:
    if value is None:
        return missing
    return f"{value:.{_decimals(value)}f} {unit}"


def fmt_pct(value: float | None, missing: str = NOT_AVAILABLE) -> str:
    return missing if value is None else f"{value:.0f}%"


def fmt_fraction(value: float | None, missing: str = NO_DATA) -> str:
    """A fraction as a percent, to the digits that matter: 0.773 → "77%", 0.052 → "5.2%",
    0.00034 → "0.034%" (two significant digits under 1%, so a small waste never reads 0%)."""
    if value is None:
        return missing
    pct = value * 100
    if pct == 0 or abs(pct) >= 9.95:
        return f"{pct:.0f}%"
    if abs(pct) >= 0.995:
        return f"{pct:.1f}%"
    return f"{pct:.2g}%"


def fmt_count(value: int | None, missing: str = NO_DATA) -> str:
    return missing if value is None else f"{value:,}"


def plural(count: int, noun: str) -> str:
    """3, "break" → "3 breaks"; 1 → "1 break"."""
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def fmt_clock(t_s: float | None, missing: str = NO_DATA) -> str:
    """A session-clock time: "83.4 s", "12:05" past ten minutes (m:ss), "1:02:05" past an hour."""
    if t_s is None:
        return missing
    return f"{t_s:.1f} s" if t_s < 600 else fmt_clock_column(t_s)


def fmt_clock_column(t_s: float | None, missing: str = NO_DATA) -> str:
    """A session-clock time in a column, one format from the start: "0:07", "9:58", "10:20",
    "1:02:05" (fmt_clock switches from "598.5 s" to "10:00", which a column must not)."""
    if t_s is None:
        return missing
    hours, rest = divmod(int(max(t_s, 0.0)), 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"


def fmt_age(age_s: float | None, missing: str = NO_DATA) -> str:
    """How long ago something was measured: "just now", "40 s ago", "12 min ago", "5 h ago",
    "3 d ago" (whole units, rounded down; a clock set back reads "just now")."""
    if age_s is None:
        return missing
    if age_s < 1:
        return "just now"
    for unit, seconds in (("d", 86400), ("h", 3600), ("min", 60)):
        if age_s >= seconds * (2 if unit != "min" else 1):
            return f"{int(age_s // seconds)} {unit} ago"
    return f"{int(age_s)} s ago"


def fmt_speed(speed: float | None) -> str:
    """Replay speed: "×1", "×0.125", "×64"; "×auto" until the engine has measured its rate."""
    return "×auto" if speed is None else f"×{speed:.3g}"


def fmt_num(value: float | None, digits: int = 1, missing: str = NO_DATA) -> str:
    """A plain number with thousands separators: 1234.5 → "1,234.5"."""
    if value is None:
        return missing
    return f"{value:,.{digits}f}"


def fmt_ratio(value: float | None, missing: str = NO_DATA) -> str:
    """Three significant digits: 1.483 → "1.48×", 11.63 → "11.6×", 11631.4 → "11,631×"."""
    return missing if value is None else f"{value:,.{_decimals(abs(value))}f}×"
