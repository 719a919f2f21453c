"""The bench's progress line on stderr, for a study run here or spread over a cluster: what
runs (experiment, config, phase; on a cluster, tasks queued, running on which node, done and
failed), elapsed and time left.

Time left is the work not done — each run's estimate (compiles expected × seconds per compile,
or what the compile cache's note says they will cost, + tokens × seconds per token), its
compile part and the rest each scaled by how the finished runs of the same kind (compiled or
eager) compared with their estimates, less what the running ones have done — spread over the
slots that run at once, and never less than the longest running run still needs; shown
through probe/bench/eta.py: it moves smoothly, and says "unknown" where it cannot know. On a
terminal the line redraws in place (a cluster's once a second); otherwise one line is printed
per phase.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import (
    TYPE_CHECKING,
    Callable,
    Hashable,
    Iterable,
    Mapping,
    Protocol,
    Sequence,
    TextIO,
)

from probe.bench.eta import Eta, Projection
from probe.common.units import fmt_clock
from probe.runs.plan import RunSpec
from workloads.buckets import bucket_for

if TYPE_CHECKING:
    from probe.runs.runs import Extra


class Task(Protocol):
    """What the cluster's line reads of a task (probe/bench/tasks.py's BenchTask)."""
    @property
    def id(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def estimate_s(self) -> float: ...

# Rough costs on a 2-core CPU; the progress line corrects them as runs finish. t5-small's
# per-token costs are the warm passes of the cold full study on the 2-core Zen 3 VM (AVX2,
# 2026-12-07): 2,089 tokens a pass, 50 s eager fullgraph, 37-38 s compiled (they had been 0.018
# and 0.010 from an AVX-512 VM, so the first compiled run rescaled every estimate after it ×1.7).
COST = {
    # model: (s per compiled function-shape, s per compile of HF generate(), s/token eager, s/token compiled)
    "t5-tiny": (2.5, 40.0, 0.005, 0.001),
    "t5-small": (12.0, 90.0, 0.024, 0.018),
}
# What every run pays before its first request: a fresh engine (the model loaded, the clock
# calibrated). Left out, an eager t5-tiny run was estimated at 2 s and took 48 s (busy 2-core
# VM, issue 49): its scale, ×24, rescaled the compiled runs after it, which erred ×6.
START_S = {"t5-tiny": 10.0, "t5-small": 15.0}
UNCACHED_COMPILES = 9   # the uncached step recompiles per prefix length up to the limit
# torch._dynamo.config.recompile_limit's default: a function compiles at most this many graphs,
# one per shape, then runs eager. Counted one per input length, E3's dynamic=off (37 lengths on
# t5-small) was estimated at 1,332 s of compiles; it compiled 8 graphs a function in 237 s.
RECOMPILE_LIMIT = 8
# A kind whose estimates are not the cost model's scales as the kind named here when none of its
# own has finished: the open-loop experiments' estimates are measured seconds of eager serving,
# so the compiled runs' scale (the cost model's error on compiled work) does not apply to them.
SCALED_AS = {"open loop": "eager"}
REDRAW_S = 1.0          # a cluster's line redraws at most once a second
# Off a terminal (a log, CI) the line is printed when a run or phase starts, and at least this
# often besides: a compile or a long pass otherwise left a log silent for minutes, and the
# projection at a given share of the wall could not be read from it.
PRINT_EVERY_S = 60.0
# The scales start from the cost model as if this share of the whole study's estimate had
# already run at its estimate (shrinkage towards 1): one odd first run must not rescale
# everything after it. The cold study of 2026-12-07 (2-core Zen 4) finished its shared
# compiled run 1.7× over its estimate (a test run beside it slowed two observer passes 3×),
# and the line went from +17% to +93% of the final 5,898 s; the rest then ran 15% under the
# cost model.
PRIOR_SHARE = 0.1


def estimate_s(spec: RunSpec, *, model: str, passes: float, start: bool = True,
               compile_s: float | None = None) -> float:
    """A run's seconds; `start`: with its engine's start (runs interleaved on one engine
    share one); `compile_s`: what its compiles will cost where that is known (its graphs in
    the compile cache: probe/bench/compile_history.py), else the cost model's cold compile."""
    return ((START_S.get(model, START_S["t5-small"]) if start else 0.0)
            + (cold_compile_s(spec, model=model) if compile_s is None else compile_s)
            + serve_s(spec, model=model, passes=passes))


def extras_s(extras: Iterable[Extra], *, model: str) -> float:
    """What a run's extras cost beyond their passes: the processes they start (each an
    engine's start) and the graphs they compile from nothing. Left out, E1's cold-start pair
    (two processes, 68 s on t5-small here) was estimated at 0 s inside the shared compiled run,
    and its scale rescaled every compiled run after it by 1.55."""
    per_compile = COST.get(model, COST["t5-small"])[0]
    start = START_S.get(model, START_S["t5-small"])
    return sum(extra.processes * start + extra.compiles * per_compile for extra in extras)


def cold_compile_s(spec: RunSpec, *, model: str) -> float:
    """Compiling every graph the run's requests meet, from an empty cache."""
    per_compile, hf_compile, _, _ = COST.get(model, COST["t5-small"])
    options = spec.options
    if not options.compiled:
        return 0.0
    if options.decode == "hf-generate":
        return hf_compile
    if options.bucketing == "on" and spec.edges:
        shapes = len({bucket_for(r.input_length, spec.edges) for r in spec.requests})
    else:
        shapes = min(len({r.input_length for r in spec.requests}), RECOMPILE_LIMIT)
    if options.dynamic == "on":
        shapes = 2
    compiles = 3 * shapes if options.kv_cache == "on" else shapes + UNCACHED_COMPILES
    scale = 2.0 if options.compile == "max-autotune" else 1.0
    return compiles * per_compile * scale


def serve_s(spec: RunSpec, *, model: str, passes: float) -> float:
    """Serving `passes` passes of the run's requests, its compiles left out."""
    _, _, eager_token, compiled_token = COST.get(model, COST["t5-small"])
    options = spec.options
    tokens = sum(r.output_length for r in spec.requests) * passes
    if not options.compiled:
        return tokens * eager_token * (3.0 if options.kv_cache == "off" else 1.0) + 1.0
    if options.decode == "hf-generate":
        return tokens * eager_token * 1.5 + 1.0
    token_s = compiled_token if options.kv_cache == "on" else eager_token * 3
    return tokens * token_s + 1.0


Scales = tuple[float, float]        # (compiling, the rest): actual over estimated seconds


@dataclass
class _Run:
    estimate: float
    kind: str = ""                  # runs of one kind share a scale: "compiled" or "eager"
    compiling: float = 0.0          # the estimate's compile seconds; the rest is serving
    state: str = "queued"           # then "running", "done" or "failed"
    since: float = 0.0
    fraction: float | None = None   # of its work done, where the run reports it
    actual: float | None = None
    actual_compiling: float | None = None   # where the run says what its compiles took

    def scaled(self, scales: Scales) -> float:
        compiling = min(self.compiling, self.estimate)
        return compiling * scales[0] + (self.estimate - compiling) * scales[1]

    def left(self, scales: Scales, now: float) -> float:
        """Its estimate, each part × its kind's scale, less what it has done (by its fraction
        done or the time it has spent, whichever leaves more)."""
        current, spent = self.scaled(scales), now - self.since
        done = current * (1 - self.fraction) if self.fraction is not None else 0.0
        return max(done, current - spent, 0.0)


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
    """The line of runs in order here (start_run/request_done/finish_run), or, made by
    `ClusterProgress`, of tasks on `slots` at once (task_started/task_phase/task_finished)."""

    def __init__(self, estimates: Sequence[float] | dict[Hashable, float],
                 stream: TextIO | None = None, width: int = 20, *,
                 kinds: Sequence[str] | None = None, slots: int = 1,
                 clock: Callable[[], float] = time.perf_counter,
                 compiling: Mapping[Hashable, float] | None = None) -> None:
        super().__init__(stream)
        keyed = estimates if isinstance(estimates, dict) else dict(enumerate(estimates))
        kinds = kinds or [""] * len(keyed)
        parts = compiling or {}
        self.runs = {key: _Run(e, k, parts.get(key, 0.0))
                     for (key, e), k in zip(keyed.items(), kinds)}
        self.width = width
        self.slots = max(1, slots)
        self._clock = clock
        self.started = clock()
        self.index = -1
        self.title = ""
        self.last_phase = ""
        self.phase_name = ""
        self.eta = Eta()
        self._shown_fraction: float | None = None
        self._printed = self.started        # when the line was last printed off a terminal

    # -- numbers ---------------------------------------------------------------------------------
    def _scale(self, kind: str = "") -> Scales:
        """Actual over estimated seconds of the finished runs of `kind` (a compile's estimate
        errs apart from a token's: one slow compile must not rescale every eager run), else of
        every finished run, each with PRIOR_SHARE of the study's estimate counted as run at
        its estimate; 1 before any finished. Where every such run said what its
        compiles took, compiling and the rest are scaled apart: a warm cache's compiles,
        far under a cold estimate, must not shrink the serving still to come."""
        finished = [r for r in self.runs.values() if r.state == "done" and r.actual is not None]
        done = ([r for r in finished if r.kind == kind]
                or [r for r in finished if r.kind == SCALED_AS.get(kind)] or finished)
        total = sum(r.estimate for r in self.runs.values())
        prior = PRIOR_SHARE * total
        estimated = sum(r.estimate for r in done)
        whole = ((sum(r.actual or 0.0 for r in done) + prior) / (estimated + prior)
                 if estimated + prior > 0 else 1.0)
        if not done or any(r.actual_compiling is None for r in done):
            return whole, whole
        # the prior split as the whole study's estimate splits between compiling and the rest
        compile_share = (sum(min(r.compiling, r.estimate) for r in self.runs.values()) / total
                         if total > 0 else 0.0)
        compiling = [r for r in done if r.compiling > 0]
        compile_estimate = sum(r.compiling for r in compiling) + prior * compile_share
        compile_scale = ((sum(r.actual_compiling or 0.0 for r in compiling)
                          + prior * compile_share) / compile_estimate
                         if compile_estimate > 0 else whole)
        # a run estimated to compile nothing that compiled anyway: that time was serving's
        rest_prior = prior * (1 - compile_share)
        rest_estimate = sum(r.estimate - min(r.compiling, r.estimate) for r in done) + rest_prior
        rest_actual = sum((r.actual or 0.0) - ((r.actual_compiling or 0.0) if r.compiling > 0
                                               else 0.0) for r in done) + rest_prior
        rest_scale = max(rest_actual, 0.0) / rest_estimate if rest_estimate > 0 else whole
        return compile_scale, rest_scale

    def remaining_s(self) -> float:
        """The raw figure: the runs left, over the slots, never under the longest running."""
        now = self._clock()
        queued = sum(r.scaled(self._scale(r.kind)) for r in self.runs.values()
                     if r.state == "queued")
        running = [r.left(self._scale(r.kind), now) for r in self.runs.values()
                   if r.state == "running"]
        return max((queued + sum(running)) / self.slots, max(running, default=0.0))

    def counts(self) -> dict[str, int]:
        return {state: sum(run.state == state for run in self.runs.values())
                for state in ("queued", "running", "done", "failed")}

    def projection(self) -> Projection:
        """What the line shows: the raw figure through Eta (it does not jump; unknown where
        the runs outran every estimate)."""
        counts = self.counts()
        return self.eta.update(self._clock() - self.started, self.remaining_s(),
                               counts["done"] + counts["failed"], guess=counts["done"] == 0)

    def done_fraction(self, left_s: float | None = None) -> float:
        elapsed = self._clock() - self.started
        left = self.remaining_s() if left_s is None else left_s
        return elapsed / (elapsed + left) if elapsed + left > 0 else 1.0

    def shown_fraction(self, projection: Projection) -> float:
        """The share done the line shows; where the time left is unknown, it stays put."""
        if projection.left_s is not None or self._shown_fraction is None:
            self._shown_fraction = self.done_fraction(projection.left_s)
        return self._shown_fraction

    def line(self) -> str:
        projection = self.projection()
        fraction = self.shown_fraction(projection)
        filled = int(round(fraction * self.width))
        bar = "#" * filled + "-" * (self.width - filled)
        elapsed = self._clock() - self.started
        return (f"[{bar}] {100 * fraction:3.0f}% {self.title} · {self.last_phase} · "
                f"{fmt_clock(elapsed)} elapsed · {projection.text()}")

    # -- events ------------------------------------------------------------------------------
    def start_run(self, index: int, experiment: str, label: str) -> None:
        self.index = index
        self.runs[index].state, self.runs[index].since = "running", self._clock()
        self.runs[index].fraction = 0.0
        self.title = f"{experiment} [{index + 1}/{len(self.runs)}] {label}"
        self.last_phase = self.phase_name = "starting"
        self._emit(force=True)

    def request_done(self, phase: str, done: int, total: int, fraction: float) -> None:
        changed = phase != self.phase_name
        self.phase_name = phase
        self.last_phase = f"{phase} {done}/{total}"
        self.runs[self.index].fraction = fraction
        self._emit(force=changed and not self.tty)

    def reestimate(self, estimates: Mapping[Hashable, float],
                   compiling: Mapping[Hashable, float] | None = None) -> None:
        """New estimates (and their compile parts) for runs not yet started, and for finished
        ones the estimate of the work they did (a run a stopping rule ended early): the
        scale then compares like with like, the machine's speed against the costs, not the
        work left out."""
        for key, estimate in estimates.items():
            run = self.runs.get(key)
            if run is not None and run.state in ("queued", "done"):
                run.estimate = estimate
                if compiling is not None:
                    run.compiling = compiling.get(key, 0.0)

    def finish_run(self, key: Hashable | None = None, error: str | None = None, *,
                   compiling_s: float | None = None) -> None:
        """`compiling_s`: what its compiles took, where the run says (it scales the compile
        estimates apart from the rest)."""
        run = self.runs.get(self.index if key is None else key)
        if run is not None:
            if run.state == "running":
                run.actual = self._clock() - run.since
                run.actual_compiling = compiling_s
            run.state = "failed" if error else "done"

    def _printing(self, force: bool) -> bool:
        """Off a terminal, whether the line is printed now: when asked, and at least every
        PRINT_EVERY_S besides."""
        if self.tty:
            return force
        now = self._clock()
        if force or now - self._printed >= PRINT_EVERY_S:
            self._printed = now
            return True
        return False

    def _emit(self, *, force: bool = False) -> None:
        self.draw(self.line(), force=self._printing(force))


class ClusterProgress(Progress):
    """The line of a study spread over a cluster: tasks by state, each running one's node and
    phase; a task's worker lost is said, and its retry counted."""

    def __init__(self, tasks: Sequence[Task], slots: int, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        super().__init__({t.id: t.estimate_s for t in tasks}, stream, slots=slots, clock=clock)
        self.titles = {t.id: t.title for t in tasks}
        self.node: dict[str, str] = {}
        self.phase: dict[str, str] = {}
        self.attempts: dict[str, int] = {}
        self._drawn = 0.0

    def task_started(self, task_id: str, hostname: str) -> None:
        self.attempts[task_id] = self.attempts.get(task_id, 0) + 1
        if self.attempts[task_id] > 1:
            self.message(f"retrying {self.titles[task_id]} on {hostname} (its worker or node "
                         f"was lost on {self.node.get(task_id, '?')})")
        run = self.runs[task_id]
        run.state, run.since, self.node[task_id] = "running", self._clock(), hostname
        self.phase[task_id] = "starting"
        self._emit(force=True)

    def task_phase(self, task_id: str, phase: str) -> None:
        self.phase[task_id] = phase
        self._emit()

    def task_finished(self, task_id: str, error: str | None = None) -> None:
        self.finish_run(task_id, error)
        if error:
            self.message(f"failed: {self.titles[task_id]}: {error}")
        self._emit(force=True)

    def tick(self) -> None:
        self._emit()

    def line(self) -> str:
        counts, projection = self.counts(), self.projection()
        elapsed = self._clock() - self.started
        fraction = self.shown_fraction(projection)
        running = "; ".join(f"{self.node[t]}: {self.titles[t]} · {self.phase.get(t, '')}"
                            for t in self.titles if self.runs[t].state == "running")
        return (f"[{100 * fraction:3.0f}%] {counts['queued']} queued · {counts['running']} "
                f"running{f' ({running})' if running else ''} · {counts['done']} done · "
                f"{counts['failed']} failed · {fmt_clock(elapsed)} elapsed · "
                f"{projection.text()}")

    def _emit(self, *, force: bool = False) -> None:
        now = self._clock()
        if force or now - self._drawn >= REDRAW_S:
            self.draw(self.line(), force=self._printing(force))
            self._drawn = now
