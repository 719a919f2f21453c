"""Reading a peer's parsed JSON field by field: every value checked for its type and range,
and anything else a BadInput naming the file and the place in it (never a KeyError)."""

from __future__ import annotations

import math
from typing import Any

from probe.common.errors import BadInput
from probe.common.shown import shown

# a duration in the tool's unit → ms
TO_MS = {"ns": 1e-6, "us": 1e-3, "µs": 1e-3, "ms": 1.0, "s": 1e3, "sec": 1e3,
         "seconds": 1e3}


class Where:
    """The file and the place in it a value came from, for the one-line refusal."""

    def __init__(self, source: str, tool: str) -> None:
        self.source, self.tool = source, tool

    def refuse(self, where: str, problem: str) -> BadInput:
        return BadInput(f"{self.source}: not a {self.tool} result file infertop reads: "
                        f"{where}: {problem}")

    def obj(self, value: Any, where: str) -> dict[str, Any]:
        if type(value) is not dict:
            raise self.refuse(where, f"expected an object, got {_kind(value)}")
        return value

    def items(self, value: Any, where: str) -> list[Any]:
        if type(value) is not list:
            raise self.refuse(where, f"expected a list, got {_kind(value)}")
        return value

    def key(self, parent: dict[str, Any], name: str, where: str) -> Any:
        if name not in parent:
            raise self.refuse(where, f"field {name!r} is missing")
        return parent[name]

    def number(self, value: Any, where: str, *, low: float = 0.0,
               high: float = 1e15) -> float:
        """A finite number within [low, high]; bools and strings are not numbers."""
        if type(value) not in (int, float) or not math.isfinite(value):
            raise self.refuse(where, f"expected a number, got {shown(value)}")
        if not low <= value <= high:
            raise self.refuse(where, f"expected a number from {low:g} to {high:g}, "
                                     f"got {value:.6g}")
        return float(value)

    def optional_number(self, value: Any, where: str, **limits: float) -> float | None:
        return None if value is None else self.number(value, where, **limits)

    def count(self, value: Any, where: str) -> int:
        if type(value) is float and value.is_integer():
            value = int(value)
        if type(value) is not int or not 0 <= value <= 2 ** 53:
            raise self.refuse(where, f"expected a count >= 0, got {shown(value)}")
        return value

    def optional_count(self, value: Any, where: str) -> int | None:
        return None if value is None else self.count(value, where)

    def text(self, value: Any, where: str) -> str:
        if type(value) is not str:
            raise self.refuse(where, f"expected a string, got {shown(value)}")
        return value

    def optional_text(self, value: Any, where: str) -> str | None:
        return None if value is None else self.text(value, where)

    def to_ms(self, value: Any, unit: Any, where: str) -> float:
        """A duration in `unit` (a name in TO_MS) as ms."""
        if type(unit) is not str or unit not in TO_MS:
            raise self.refuse(f"{where}.unit", f"expected a time unit ({', '.join(TO_MS)}), "
                                               f"got {shown(unit)}")
        return self.number(value, where) * TO_MS[unit]


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__
