"""The bench's progress line on stderr: experiment, config, phase, elapsed and time left.

Time left comes from a per-run estimate (compiles expected × seconds per compile + tokens ×
seconds per token), scaled by how the finished runs of the same kind (compiled or eager)
compared with their estimates, and shown through probe/bench/eta.py: it moves smoothly, and
says "unknown" where it cannot know. On a terminal the line redraws in place; otherwise one
line is printed per phase.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Callable, Sequence, TextIO

from probe.bench.eta import Eta, Projection
from probe.common.units import fmt_clock
from probe.runs.plan import RunSpec
from workloads.buckets import bucket_for

# Rough costs on a 2-core CPU; the progress line corrects them as runs finish.
COST = {
    # model: (s per compiled function-shape, s per compile of HF generate(), s/token eager, s/token compiled)
    "t5-tiny": (2.5, 40.0, 0.005, 0.001),
    "t5-small": (12.0, 90.0, 0.018, 0.010),
}
# What every run pays before its first request: a fresh engine (the model loaded, the clock
# calibrated). Left out, an eager t5-tiny run was estimated at 2 s and took 48 s (busy 2-core
# VM, issue 49): its scale, ×24, rescaled the compiled runs after it, which erred ×6.
START_S = {"t5-tiny": 10.0, "t5-small": 15.0}
UNCACHED_COMPILES = 9   # the uncached step recompiles per prefix length up to the limit


def estimate_s(spec: RunSpec, *, model: str, passes: int, start: bool = True) -> float:
    """A run's seconds; `start`: with its engine's start (runs interleaved on one engine
    share one)."""
    return (START_S.get(model, START_S["t5-small"]) if start else 0.0) + _work_s(
        spec, model=model, passes=passes)


def _work_s(spec: RunSpec, *, model: str, passes: int) -> float:
    per_compile, hf_compile, eager_token, compiled_token = COST.get(model, COST["t5-small"])
    options = spec.options
    tokens = sum(r.output_length for r in spec.requests) * passes
    if not options.compiled:
        factor = 3.0 if options.kv_cache == "off" else 1.0
        return tokens * eager_token * factor + 1.0
    if options.decode == "hf-generate":
        return hf_compile + tokens * eager_token * 1.5 + 1.0
    if options.bucketing == "on" and spec.edges:
        shapes = len({bucket_for(r.input_length, spec.edges) for r in spec.requests})
    else:
        shapes = len({r.input_length for r in spec.requests})
    if options.dynamic == "on":
        shapes = 2
    compiles = 3 * shapes if options.kv_cache == "on" else shapes + UNCACHED_COMPILES
    scale = 2.0 if options.compile == "max-autotune" else 1.0
    token_s = compiled_token if options.kv_cache == "on" else eager_token * 3
    return compiles * per_compile * scale + tokens * token_s + 1.0



@dataclass
class _Run:
    estimate: float
    kind: str = ""                  # runs of one kind share a scale: "compiled" or "eager"
    actual: float | None = None


class StatusLine:
    """A line on stderr: redrawn in place on a terminal, else printed when it matters."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def message(self, text: str) -> None:
        if self.tty:
            self.stream.write("\r\x1b[2K")
        self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()

    def draw(self, text: str, *, force: bool = False) -> None:
        if self.tty:
            self.stream.write("\r\x1b[2K" + text[:200])
            self.stream.flush()
        elif force:
            self.stream.write(text + "\n")
            self.stream.flush()


class Progress(StatusLine):
    def __init__(self, estimates: list[float], stream: TextIO | None = None,
                 width: int = 20, *, kinds: Sequence[str] | None = None,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        super().__init__(stream)
        self.runs = [_Run(e, k) for e, k in zip(estimates, kinds or [""] * len(estimates))]
        self.width = width
        self._clock = clock
        self.started = clock()
        self.index = -1
        self.run_started = self.started
        self.title = ""
        self.last_phase = ""
        self.phase_name = ""
        self.fraction = 0.0
        self.eta = Eta()
        self._shown_fraction: float | None = None

    # -- numbers ---------------------------------------------------------------------------------
    def _scale(self, kind: str = "") -> float:
        """Actual over estimated seconds of the finished runs of `kind` (a compile's estimate
        errs apart from a token's: one slow compile must not rescale every eager run), else of
        every finished run; 1 before any finished."""
        finished = [r for r in self.runs if r.actual is not None]
        done = [r for r in finished if r.kind == kind] or finished
        estimated = sum(r.estimate for r in done)
        return (sum(r.actual or 0.0 for r in done) / estimated) if estimated > 0 else 1.0

    def remaining_s(self) -> float:
        """The raw figure: each run left at its estimate × its kind's scale, the current one
        less what it has done."""
        left = sum(r.estimate * self._scale(r.kind) for r in self.runs[self.index + 1:])
        if 0 <= self.index < len(self.runs):
            run = self.runs[self.index]
            current = run.estimate * self._scale(run.kind)
            spent = self._clock() - self.run_started
            left += max(current * (1 - self.fraction), current - spent, 0.0)
        return left

    def projection(self) -> Projection:
        """What the line shows: the raw figure through Eta (it does not jump; unknown where
        the runs outran every estimate)."""
        finished = sum(r.actual is not None for r in self.runs)
        return self.eta.update(self._clock() - self.started, self.remaining_s(), finished,
                               guess=finished == 0)

    def done_fraction(self, left_s: float | None = None) -> float:
        elapsed = self._clock() - self.started
        left = self.remaining_s() if left_s is None else left_s
        return elapsed / (elapsed + left) if elapsed + left > 0 else 1.0

    def line(self) -> str:
        projection = self.projection()
        if projection.left_s is not None or self._shown_fraction is None:
            self._shown_fraction = self.done_fraction(projection.left_s)
        fraction = self._shown_fraction      # unknown: the bar stays where it was
        filled = int(round(fraction * self.width))
        bar = "#" * filled + "-" * (self.width - filled)
        elapsed = self._clock() - self.started
        return (f"[{bar}] {100 * fraction:3.0f}% {self.title} · {self.last_phase} · "
                f"{fmt_clock(elapsed)} elapsed · {projection.text()}")

    # -- events ------------------------------------------------------------------------------
    def start_run(self, index: int, experiment: str, label: str) -> None:
        self.index = index
        self.run_started = self._clock()
        self.title = f"{experiment} [{index + 1}/{len(self.runs)}] {label}"
        self.last_phase = self.phase_name = "starting"
        self.fraction = 0.0
        self._emit(force=True)

    def request_done(self, phase: str, done: int, total: int, fraction: float) -> None:
        changed = phase != self.phase_name
        self.phase_name = phase
        self.last_phase = f"{phase} {done}/{total}"
        self.fraction = fraction
        self._emit(force=changed and not self.tty)

    def finish_run(self) -> None:
        if 0 <= self.index < len(self.runs):
            self.runs[self.index].actual = self._clock() - self.run_started

    def _emit(self, *, force: bool = False) -> None:
        self.draw(self.line(), force=force)
