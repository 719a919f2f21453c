"""The service-level objective a session is measured against (`--slo ttft=1s,tpot=60ms,
latency=8s`): the value, how it is written and read back, and which request meets it. What it
makes of a set of records (goodput, attainment) is probe/analysis/slo.py."""

from __future__ import annotations

import math
import re
from dataclasses import asdict, astuple, dataclass
from typing import Any

from probe.common.errors import BadInput
from probe.contract.records import RequestRecord

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
        return {name: ms for name, ms in zip(BOUNDS, astuple(self)) if ms is not None}

    def as_dict(self) -> dict[str, float | None]:
        return asdict(self)

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
    """`ttft=1s,tpot=60ms,latency=8s` → Slo; BadInput naming the bad part otherwise."""
    if not text or not text.strip():
        raise BadInput(f"{where}: empty; give one or more of {', '.join(BOUNDS)}, "
                          f"e.g. ttft=1s,tpot=60ms,latency=8s")
    found: dict[str, float] = {}
    for part in text.split(","):
        match = _BOUND.match(part)
        if match is None:
            raise BadInput(f"{where}: {part.strip()!r} is not NAME=VALUE (e.g. ttft=1s)")
        name, raw = match.group(1).lower(), match.group(2)
        if name not in BOUNDS:
            raise BadInput(f"{where}: unknown bound {match.group(1)!r}; choose from "
                              f"{', '.join(BOUNDS)}")
        if name in found:
            raise BadInput(f"{where}: {name} is given twice")
        found[name] = _milliseconds(raw, f"{where} {name}")
    return Slo(**{f"{name}_ms": value for name, value in found.items()})


def _milliseconds(raw: str, where: str) -> float:
    match = _VALUE.match(raw.strip())
    if match is None:
        raise BadInput(f"{where}: {raw!r} is not a number with a unit (ms or s), e.g. 60ms")
    number, unit = float(match.group(1)), match.group(2).lower()
    if unit not in UNITS_MS:
        raise BadInput(f"{where}: unit {match.group(2) or '(none)'!r} is not ms or s")
    value = number * UNITS_MS[unit]
    if not (math.isfinite(value) and value > 0):
        raise BadInput(f"{where}: {raw!r} must be a positive bound")
    return value


def slo_from_dict(raw: Any, where: str = "slo") -> Slo | None:
    """The SLO a session was saved with (its top-level `slo`); None when it has none."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise BadInput(f"{where}: expected an object, got {type(raw).__name__}")
    values = {}
    for key in (f"{name}_ms" for name in BOUNDS):
        value = raw.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not math.isfinite(value) or value <= 0):
            raise BadInput(f"{where}.{key}: expected a positive number or null, got {value!r}")
        values[key] = None if value is None else float(value)
    return Slo(**values)


def slo_argument(text: str) -> Slo:
    """An argparse type for `--slo`: a bad one is argparse's one-line error (exit 2)."""
    import argparse
    try:
        return parse_slo(text, "")
    except BadInput as exc:
        raise argparse.ArgumentTypeError(str(exc).lstrip(": ")) from None


SLO_HELP = ("a service-level objective: any of ttft, tpot, latency with ms or s, e.g. "
            "ttft=1s,tpot=60ms,latency=8s; goodput and attainment are measured against it")
