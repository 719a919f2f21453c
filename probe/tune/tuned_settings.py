"""The engine settings `tune --search quick|exhaustive` varies beside the options: the planner's
bucket count (under bucketing=on), the slots (max_batch: rows of a dynamic batch, continuous
batching's slots) and the dynamic batch's window. Each is set only where its option makes it
act, else None; a `Setup` is what one trial serves: its options and these settings. Values
only, round-tripped through tune.json."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Callable, Mapping

from probe.contract.options import OptConfig

# what a run serves when a search does not vary it: the planner's 4 edges (the default of
# every command), tune's 8 slots (probe/runs/openloop.MAX_BATCH) and the engine's 50 ms window
DEFAULTS: dict[str, int] = {"bucket_count": 4, "max_batch": 8, "batch_window_ms": 50}
# the option, and its values, under which each setting acts
PARENTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "bucket_count": ("bucketing", ("on",)),
    "max_batch": ("batching", ("dynamic", "continuous")),
    "batch_window_ms": ("batching", ("dynamic",)),
}
# the most each may be given (--space KEY=V/V/…): more edges than shapes worth compiling,
# --max-batch's own limit, ten seconds of waiting for company
LIMITS: dict[str, int] = {"bucket_count": 64, "max_batch": 4096, "batch_window_ms": 10_000}


@dataclass(frozen=True)
class TunedSettings:
    bucket_count: int | None = None      # the planner's K: edges for the trace's lengths
    max_batch: int | None = None
    batch_window_ms: int | None = None

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) is not None}

    @classmethod
    def from_dict(cls, raw: Mapping | None) -> TunedSettings:
        return cls(**{k: int(v) for k, v in (raw or {}).items() if k in DEFAULTS})

    def label(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.as_dict().items())


@dataclass(frozen=True)
class Setup:
    """One trial's config and the settings it is served with."""
    options: OptConfig
    settings: TunedSettings = TunedSettings()

    def label(self) -> str:
        extra = self.settings.label()
        return f"{self.options.label()} {extra}" if extra else self.options.label()


def served_settings(setup: Setup) -> dict:
    """What the engine is built with: max_batch and the window where set, else tune's
    defaults (the engine ignores each where its option does not make it act)."""
    s = setup.settings
    return {"max_batch": s.max_batch or DEFAULTS["max_batch"],
            "batch_window_ms": float(s.batch_window_ms or DEFAULTS["batch_window_ms"])}


def rerun_flags(setup: Setup, edges_for: Callable[[int], tuple[int, ...]]) -> str:
    """The flags that serve the same settings with `replay` or the dashboard, beside its
    --opt line: the planner's edges for the bucket count (--buckets), --max-batch, and
    --batch-window."""
    s, out = setup.settings, []
    if s.bucket_count is not None:
        out.append(f"--buckets {','.join(str(e) for e in edges_for(s.bucket_count))}")
    if s.max_batch is not None:
        out.append(f"--max-batch {s.max_batch}")
    if s.batch_window_ms is not None:
        out.append(f"--batch-window {s.batch_window_ms}")
    return " ".join(out)
