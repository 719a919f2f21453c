"""What an experiment is: its template (hypothesis, variable, control, expected), its runs,
the builder of its report section, the checks read back from that section, what `--quick`
leaves out of it and its figures. The configs most experiments share are named here."""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from typing import Callable, Mapping, Sequence, TypeGuard

from probe.common.units import NO_DATA, fmt_ms, fmt_num, fmt_s
from probe.contract.options import OptConfig
from probe.report_charts.bench_figures import SectionFigures
from probe.runs.openloop import OpenLoopStudy
from probe.runs.plan import Plan, RunSpec
from probe.runs.results import Outcome, RunResult
from probe.runs.runs import Extra
from probe.runs.spread import fmt_spread
from probe.runs.verdict import usable

# Every compiled run uses these unless the experiment varies them: decode fullgraph, the
# planner's buckets, KV cache on, fp32, dynamic shapes off.
REFERENCE = OptConfig(compile="default", decode="fullgraph", bucketing="on")
# int8 as the engine serves it on the bf16 model (on a CPU: int8 GEMMs, dynamic activations).
REFERENCE_BF16 = REFERENCE.with_option("precision", "bf16")
REFERENCE_INT8 = REFERENCE_BF16.with_option("quant", "int8")
# The per-step overhead levers together, the library's matmuls kept: kernels launched from C++,
# dynamo checking only the inputs, attention inductor fuses (E6's last step; the roofline's).
LEAN_STEP: tuple[tuple[str, str], ...] = (("wrapper", "cpp"), ("guards", "lean"),
                                          ("attention", "inductor"))
EAGER_FULLGRAPH = OptConfig(decode="fullgraph", bucketing="on")
HF_EAGER = OptConfig()


def with_settings(options: OptConfig, settings: tuple[tuple[str, str], ...]) -> OptConfig:
    return reduce(lambda chosen, setting: chosen.with_option(*setting), settings, options)


def settings_text(settings: tuple[tuple[str, str], ...]) -> str:
    return ", ".join(f"{key}={value}" for key, value in settings)


Results = Mapping[str, Outcome]          # role → its run's outcome
Checks = Callable[[dict], dict]          # section → the acceptance properties it shows
LeftOut = Callable[[Plan], Sequence[str]]  # plan → what --quick left out, "ID: … without --quick"


@dataclass(frozen=True)
class Template:
    """The seed study's template: every section states these before its numbers."""
    id: str
    title: str
    hypothesis: str
    variable: str
    control: str
    expected: str

    def section(self, *, table: dict, observed: list[str], root_cause: list[str],
                configs: dict | None = None, extra_tables: list[dict] | None = None,
                notes: list[str] | None = None, **more) -> dict:
        return {"id": self.id, "title": self.title, "hypothesis": self.hypothesis,
                "variable": self.variable, "control": self.control, "expected": self.expected,
                "observed": observed, "root_cause": root_cause, "configs": configs or {},
                "table": table, "extra_tables": extra_tables or [], "notes": notes or [],
                **more}

    def when_quick(self, *notes: str) -> LeftOut:
        """What `--quick` leaves out of it, each note with the way back ("ID: note")."""
        said = tuple(f"{self.id}: {note}" for note in notes)
        return lambda plan: said if plan.quick else ()

    def failed_section(self, exc: BaseException, trace: str = "") -> dict:
        return {"id": self.id, "title": self.title, "error": f"{type(exc).__name__}: {exc}",
                "traceback": trace}


def no_checks(section: dict) -> dict:
    return {}


@dataclass(frozen=True)
class Experiment:
    """Served back to back: its runs are specs the study runs once each (shared when equal)."""
    template: Template
    runs: Callable[[Plan], dict[str, RunSpec]]
    build: Callable[[Plan, Results, dict], dict]       # (plan, results by role, environment)
    checks: Checks = no_checks
    # what a role's run measures beyond its passes (e.g. E1's cold-start pair), by plan
    extras: Callable[[Plan], Mapping[str, frozenset[Extra]]] = lambda plan: {}
    # (role, the role it is judged against) for each verdict it gives: the pairs a run's
    # stopping rule settles (probe/runs/stopping.py); a run in no pair serves its cap
    pairs: Callable[[Plan], list[tuple[str, str]]] = lambda plan: []
    # roles a verdict on the repeats' range reads (a p95): they serve every pass of the cap
    whole: Callable[[Plan], tuple[str, ...]] = lambda plan: ()
    # roles whose runs share one engine with interleaved passes (eager configs only)
    groups: Callable[[Plan], list[tuple[str, ...]]] = lambda plan: []
    left_out: LeftOut = lambda plan: ()
    figures: SectionFigures = lambda charts: ()
    measures_machine: bool = False      # reads environment["roofline"] (bandwidth, GEMMs)


@dataclass(frozen=True)
class OpenLoopExperiment:
    """Replayed open loop with engines of its own (batching only shows under queueing):
    `measure` returns its results (report.json `runs.<id>`) and its section."""
    template: Template
    measure: Callable[[OpenLoopStudy], tuple[dict, dict]]
    checks: Checks = no_checks
    # rough seconds on a 2-core CPU, for a cluster's time left (corrected as tasks finish)
    estimate_s: Callable[[Plan], float] = lambda plan: 60.0
    left_out: LeftOut = lambda plan: ()
    figures: SectionFigures = lambda charts: ()
    measures_machine: bool = False


def warm_row(result: Outcome) -> list[str]:
    """cold start, warm p50, warm p95, ms/token, tokens/s"""
    run = usable(result)
    if isinstance(run, str):
        return [run] + [NO_DATA] * 4
    steady = run.steady
    return [fmt_ms(run.cold_start_ms), fmt_spread(steady.latency_p50_ms),
            fmt_spread(steady.latency_p95_ms), fmt_spread(steady.tpot_ms),
            fmt_spread(steady.tokens_per_s, lambda v: fmt_num(v, 0))]


def compiled_text(result: RunResult) -> str:
    """The compiles and their seconds, with the largest part where dynamo split them:
    "54 compiles (36 graphs) in 26.7 s, 92% tracing"."""
    share = (f", {result.compile_phases.largest_share()}"
             if result.compile_phases is not None and result.compile_phases.total_s else "")
    return (f"{result.compiles + result.recompiles} compiles ({result.graphs} graphs) "
            f"in {fmt_s(result.compile_s)}{share}")


def served(result: Outcome) -> TypeGuard[RunResult]:
    """The run finished (some requests may have failed): its figures exist."""
    return isinstance(result, RunResult)
