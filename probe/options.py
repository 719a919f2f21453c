"""The optimization switchboard's value object and the `--opt KEY=VALUE` parser.

`OptConfig` is frozen: the engine swaps it whole between requests, never inside one, and every
request record carries the id of the config that served it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Iterable

from probe.errors import ConfigError

CHOICES: dict[str, tuple[str, ...]] = {
    "compile": ("off", "default", "reduce-overhead", "max-autotune"),
    "decode": ("hf-generate", "fullgraph"),
    "dynamic": ("off", "on"),
    "bucketing": ("off", "on"),
    "kv_cache": ("on", "off"),
    "precision": ("fp32", "bf16", "fp16"),
    "quant": ("off", "int8"),
    "prewarm": ("off", "on"),
    "batching": ("off", "dynamic", "continuous"),
    "freezing": ("off", "on"),
    "kv_layout": ("static", "paged"),
}


@dataclass(frozen=True)
class OptConfig:
    compile: str = "off"
    decode: str = "hf-generate"
    dynamic: str = "off"
    bucketing: str = "off"
    kv_cache: str = "on"
    precision: str = "fp32"
    quant: str = "off"
    prewarm: str = "off"
    batching: str = "off"
    freezing: str = "off"
    kv_layout: str = "static"

    def __post_init__(self) -> None:
        for key, value in asdict(self).items():
            if value not in CHOICES[key]:
                raise ConfigError(
                    f"option {key}={value!r} is not valid; choose one of: {', '.join(CHOICES[key])}"
                )

    def as_dict(self) -> dict[str, str]:
        return asdict(self)

    def with_option(self, key: str, value: str) -> OptConfig:
        if key not in CHOICES:
            raise ConfigError(f"unknown option {key!r}; valid keys: {', '.join(CHOICES)}")
        return replace(self, **{key: value})

    def cycled(self, key: str) -> OptConfig:
        """The next value of `key` in CHOICES order, wrapping: what a hotkey does."""
        values = CHOICES[key]
        return self.with_option(key, values[(values.index(getattr(self, key)) + 1) % len(values)])

    def label(self) -> str:
        """Only what differs from the defaults, e.g. `compile=default decode=fullgraph`."""
        default = OptConfig()
        changed = [f"{f.name}={getattr(self, f.name)}" for f in fields(self)
                   if getattr(self, f.name) != getattr(default, f.name)]
        return " ".join(changed) or "baseline"

    @property
    def compiled(self) -> bool:
        return self.compile != "off"


def parse_opts(pairs: Iterable[str], base: OptConfig | None = None) -> OptConfig:
    """Apply `KEY=VALUE` strings to `base`; a bad one raises ConfigError naming it and the choices."""
    config = base or OptConfig()
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip().replace("-", "_")
        if not sep:
            raise ConfigError(f"--opt {pair!r} is not KEY=VALUE; valid keys: {', '.join(CHOICES)}")
        config = config.with_option(key, value.strip())
    return config
