"""What the study's compile cache already holds, run by run, so that the progress line projects
a run whose graphs are cached as the warm run it will be.

inductor's FX graph cache and AOTAutograd's cache answer a lookup, but only once dynamo has
traced the function, and they say nothing about a run before it starts; no torch API tells
which configs a cache folder can serve. So the bench keeps its own note beside the cache, in
the same folder (deleting the cache deletes the note): each compiled run's compile seconds by
phase, under a key of everything that changes its graphs. A run found there is projected at
its tracing again (dynamo traces every fresh engine) plus loading what the cache holds.

Measured (t5-small, E1, the 2-core Zen 3 VM): a cold run's compile split 26.7 s tracing + 112 s
AOTAutograd and inductor; the same run warm, 24.9 s tracing + 3.5 s loading from the cache.
Loading took 3.2–4.4% of what it replaced over E1's three compiled configs (LOAD_SHARE).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Mapping

from probe.common.atomic import replace_atomically
from probe.runs.plan import RunSpec
from probe.runs.results import RunResult

log = logging.getLogger(__name__)

HISTORY_FILE = "infertop-bench-compiles.json"
LOAD_SHARE = 0.04       # loading a cached graph ÷ compiling it (AOTAutograd + inductor)


@dataclass(frozen=True)
class PastCompile:
    """One compiled run's compile, as its session split it (CompilePhases)."""
    label: str              # the run's config, for a reader of the file
    tracing_s: float
    lowering_s: float       # AOTAutograd and inductor: what a cache hit skips
    load_s: float           # loading from the caches
    misses: int             # FX graph cache misses: 0 and hits > 0 is a warm run
    hits: int

    def warm_s(self) -> float:
        """What this run's compile should cost with its graphs in the cache."""
        if self.misses == 0 and self.hits > 0:
            return self.tracing_s + self.load_s
        return self.tracing_s + LOAD_SHARE * self.lowering_s


def history_key(spec: RunSpec, *, model: str, device: str, backend: str) -> str:
    """Everything that changes a run's graphs: the model, the device, torch and its backend,
    the thread count, the config, its buckets, and the request shapes it meets."""
    import torch
    shapes = sorted({(r.input_length, r.output_length) for r in spec.requests})
    identity = [model, device, backend, torch.__version__, torch.get_num_threads(),
                spec.options.label(), list(spec.edges), shapes]
    return hashlib.sha256(json.dumps(identity).encode()).hexdigest()[:24]


def past_compile(spec: RunSpec, result: RunResult) -> PastCompile | None:
    """A finished compiled run's entry; None where it compiled nothing it could cache."""
    phases, cache = result.compile_phases, result.cache or {}
    if not spec.options.compiled or phases is None:
        return None
    return PastCompile(spec.options.label(), phases.tracing_s,
                       phases.aot_s + phases.inductor_s, phases.cache_load_s,
                       int(cache.get("fxgraph_cache_miss", 0)),
                       int(cache.get("fxgraph_cache_hit", 0)))


class CompileHistory:
    """The note in `folder` (inductor's cache folder). A missing or unreadable note is an
    empty one: the runs are then projected cold, as they were before it existed. Projections
    read the note as the study found it: a run of this study is projected (and, finished,
    re-projected) against the cache it started with, not against its own compile."""

    def __init__(self, folder: Path, *, model: str, device: str, backend: str) -> None:
        self.path = folder / HISTORY_FILE
        self.model, self.device, self.backend = model, device, backend
        self.entries: dict[str, PastCompile] = _read(self.path)

    def key(self, spec: RunSpec) -> str:
        return history_key(spec, model=self.model, device=self.device, backend=self.backend)

    def warm_s(self, spec: RunSpec) -> float | None:
        """The compile seconds this run is expected to pay now; None: not cached, compile."""
        past = self.entries.get(self.key(spec)) if spec.options.compiled else None
        return None if past is None else past.warm_s()

    def record(self, outcomes: Mapping[str, tuple[RunSpec, RunResult]]) -> None:
        """Keep the finished runs' compiles; the note is rewritten whole or not at all."""
        new = {self.key(spec): entry for spec, result in outcomes.values()
               if (entry := past_compile(spec, result)) is not None}
        if not new:
            return
        merged = _read(self.path) | new     # another study may have added its own
        document = {key: asdict(entry) for key, entry in sorted(merged.items())}

        def write(temporary: str) -> None:
            with open(temporary, "w") as handle:
                json.dump(document, handle, indent=1)
        try:
            replace_atomically(self.path, write)
        except OSError as exc:       # the projection loses its memory; the study goes on
            log.warning("compile history not written to %s: %s", self.path, exc)


def _read(path: Path) -> dict[str, PastCompile]:
    try:
        document = json.loads(path.read_text())
        return {key: PastCompile(**value) for key, value in document.items()}
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        log.warning("compile history %s unreadable (%s); projecting every run cold",
                    os.fspath(path), exc)
        return {}
