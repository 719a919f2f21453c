"""A service-level objective (`--slo ttft=1s,tpot=60ms,latency=8s`) and what it makes of records:
which requests are good, goodput and attainment. Torch-free: the dashboard, `snapshot show` and
the exporter read it as the engine does.

Definitions (one each, used by every view):
- a request is **good** when it was served (no error) and meets every bound the SLO gives;
  a bound the SLO leaves out does not apply.
- a served request with **no TTFT** (it produced no token) fails a TTFT bound: nothing shows
  it was met. A request with **no TPOT** (one output token: there is no time between tokens)
  passes a TPOT bound: there is nothing to bound.
- **goodput** is good requests, and their output tokens, per second of `serving_span_s` over
  every record of the set (failed ones included): the span throughput is measured over, so
  goodput ≤ throughput always.
- **SLO attainment** is good ÷ all records of the set (a failed request counts as not good).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Sequence

from probe.contract.errors import ConfigError
from probe.contract.records import RequestRecord
from probe.contract.span import serving_span_s

BOUNDS = ("ttft", "tpot", "latency")
UNITS_MS = {"ms": 1.0, "s": 1000.0}
_BOUND = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*([^=]*?)\s*$")
_VALUE = re.compile(r"^([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z]*)$")


@dataclass(frozen=True)
class Slo:
    """Upper bounds in milliseconds; None: that bound is not part of the objective."""
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    latency_ms: float | None = None

    def bounds(self) -> dict[str, float]:
        return {name: value for name, value in
                (("ttft", self.ttft_ms), ("tpot", self.tpot_ms), ("latency", self.latency_ms))
                if value is not None}

    def as_dict(self) -> dict[str, float | None]:
        return {"ttft_ms": self.ttft_ms, "tpot_ms": self.tpot_ms, "latency_ms": self.latency_ms}

    def text(self) -> str:
        """`ttft=1s,tpot=60ms`: the form `--slo` takes, so it can be pasted back."""
        return ",".join(f"{name}={_ms_text(value)}" for name, value in self.bounds().items())

    def meets(self, record: RequestRecord) -> bool:
        """Served and within every bound given (see the module's definitions)."""
        if not record.ok:
            return False
        if self.ttft_ms is not None and (record.ttft_ms is None or record.ttft_ms > self.ttft_ms):
            return False
        if self.tpot_ms is not None and record.tpot_ms is not None \
                and record.tpot_ms > self.tpot_ms:
            return False
        return self.latency_ms is None or record.latency_ms <= self.latency_ms


def _ms_text(value: float) -> str:
    if value >= 1000 and value % 1000 == 0:
        return f"{value / 1000:g}s"
    return f"{value:g}ms"


def parse_slo(text: str, where: str = "--slo") -> Slo:
    """`ttft=1s,tpot=60ms,latency=8s` → Slo; ConfigError naming the bad part otherwise."""
    if not text or not text.strip():
        raise ConfigError(f"{where}: empty; give one or more of {', '.join(BOUNDS)}, "
                          f"e.g. ttft=1s,tpot=60ms,latency=8s")
    found: dict[str, float] = {}
    for part in text.split(","):
        match = _BOUND.match(part)
        if match is None:
            raise ConfigError(f"{where}: {part.strip()!r} is not NAME=VALUE (e.g. ttft=1s)")
        name, raw = match.group(1).lower(), match.group(2)
        if name not in BOUNDS:
            raise ConfigError(f"{where}: unknown bound {match.group(1)!r}; choose from "
                              f"{', '.join(BOUNDS)}")
        if name in found:
            raise ConfigError(f"{where}: {name} is given twice")
        found[name] = _milliseconds(raw, f"{where} {name}")
    return Slo(ttft_ms=found.get("ttft"), tpot_ms=found.get("tpot"),
               latency_ms=found.get("latency"))


def _milliseconds(raw: str, where: str) -> float:
    match = _VALUE.match(raw.strip())
    if match is None:
        raise ConfigError(f"{where}: {raw!r} is not a number with a unit (ms or s), e.g. 60ms")
    number, unit = float(match.group(1)), match.group(2).lower()
    if unit not in UNITS_MS:
        raise ConfigError(f"{where}: unit {match.group(2) or '(none)'!r} is not ms or s")
    value = number * UNITS_MS[unit]
    if not (math.isfinite(value) and value > 0):
        raise ConfigError(f"{where}: {raw!r} must be a positive bound")
    return value


def slo_from_dict(raw: Any, where: str = "slo") -> Slo | None:
    """The SLO a session was saved with (its top-level `slo`); None when it has none."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected an object, got {type(raw).__name__}")
    values = {}
    for key in ("ttft_ms", "tpot_ms", "latency_ms"):
        value = raw.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not math.isfinite(value) or value <= 0):
            raise ConfigError(f"{where}.{key}: expected a positive number or null, got {value!r}")
        values[key] = None if value is None else float(value)
    return Slo(**values)


def good_requests(records: Sequence[RequestRecord], slo: Slo) -> list[RequestRecord]:
    return [r for r in records if slo.meets(r)]


def goodput_rps(records: Sequence[RequestRecord], slo: Slo) -> float | None:
    """Good requests per second of `serving_span_s` (the throughput's own span)."""
    span = serving_span_s(records)
    return len(good_requests(records, slo)) / span if span > 0 else None


def goodput_tokens_per_s(records: Sequence[RequestRecord], slo: Slo) -> float | None:
    """Output tokens of good requests per second of the same span."""
    span = serving_span_s(records)
    return sum(r.output_tokens for r in good_requests(records, slo)) / span if span > 0 else None


def slo_attainment(records: Sequence[RequestRecord], slo: Slo) -> float | None:
    """Good ÷ all records (failed ones count as not good); None for no records."""
    return len(good_requests(records, slo)) / len(records) if records else None


@dataclass(frozen=True)
class Goodput:
    """The three SLO figures of one set of records."""
    goodput_rps: float | None
    goodput_tokens_per_s: float | None
    slo_attainment: float | None

    def as_dict(self) -> dict[str, float | None]:
        return {"goodput_rps": self.goodput_rps,
                "goodput_tokens_per_s": self.goodput_tokens_per_s,
                "slo_attainment": self.slo_attainment}


NO_GOODPUT = Goodput(None, None, None)


def goodput(records: Sequence[RequestRecord], slo: Slo | None) -> Goodput:
    if slo is None:
        return NO_GOODPUT
    return Goodput(goodput_rps(records, slo), goodput_tokens_per_s(records, slo),
                   slo_attainment(records, slo))


def slo_argument(text: str) -> Slo:
    """An argparse type for `--slo`: a bad one is argparse's one-line error (exit 2)."""
    import argparse
    try:
        return parse_slo(text, "")
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc).lstrip(": ")) from None


SLO_HELP = ("a service-level objective: any of ttft, tpot, latency with ms or s, e.g. "
            "ttft=1s,tpot=60ms,latency=8s; goodput and attainment are measured against it")
