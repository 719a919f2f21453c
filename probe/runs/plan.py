"""What a study serves: its settings (with `--quick`'s defaults), the replayed requests, the
bucket sets, and one run's spec. Every experiment reads the same Plan."""

from __future__ import annotations

import argparse
import random
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from probe.common.errors import BadInput
from probe.common.percentile import percentiles
from probe.contract.objective import Slo
from probe.contract.options import OptConfig
from workloads.buckets import plan_buckets, powers_of_two_plan
from workloads.fitting import fit_to_model
from workloads.trace import load_trace

QUICK_MODEL, DEFAULT_MODEL = "t5-tiny", "t5-small"
QUICK_REQUESTS, DEFAULT_REQUESTS = 3, 40
QUICK_REPEATS, DEFAULT_REPEATS = 2, 3
QUICK_BUCKETS, DEFAULT_BUCKETS = 2, 4
QUICK_E5_REQUESTS, DEFAULT_E5_REQUESTS = 2, 8
MAX_INPUT, MAX_OUTPUT = 512, 512
FULL_COMPILE_MODES = ("default", "reduce-overhead", "max-autotune")
# What --quick leaves out, one line per experiment: what and how to get it. --quick serves one
# run per phenomenon: a compiled run only where an acceptance check needs it, read by every
# experiment that can (REFERENCE by E1, E2, E4, E6, roofline and observer).
QUICK_LEFT_OUT = (
    "E1: --quick leaves out the cold start from the compile cache (two more fresh processes, "
    "each starting the compiled config: about a minute here); run without --quick to "
    "measure it",
    "E3: --quick leaves out dynamic=on (its symbolic-shape compile is the longest of the "
    "study; the check, recompiles growing with the distinct lengths, needs dynamic=off "
    "only); run without --quick to include it",
    "E4: --quick computes the powers-of-two row (its shapes and padding follow from the "
    "lengths alone) instead of compiling and serving it; run without --quick to measure it",
    "E5: --quick serves short and long outputs (medium lies between them); run without "
    "--quick to include medium",
    "E6: --quick orders the steps baseline → +KV cache → +bucketing → +compile → "
    "+graph-break removal, so each compiled step is a run E2 and E4 serve anyway (compiling "
    "without the cache recompiles up to dynamo's limit: three more cold compiles), and stops "
    "there (+bf16, +int8 and +lean step are each one more cold compile of every shape); run "
    "without --quick for the seed's order and every step",
    "E7: --quick replays chat at 4× capacity only (batch at 2× and chat at 0.5–2× show the "
    "same modes below and at saturation); run without --quick for the sweep",
    "roofline: --quick holds the compiled fp32 step and HF eager against the roofline (each "
    "lever and each other precision is one more cold compile); run without --quick for the "
    "grid",
)
# E5's output classes --quick serves: E5's check reads the long ones, short shows the other end
QUICK_E5_CLASSES = ("short", "long")


@dataclass(frozen=True)
class BenchSettings:
    """The command line, with `--quick`'s defaults filled in."""
    model: str
    trace: str
    device: str
    out: Path
    experiments: tuple[str, ...]
    quick: bool = False
    requests: int = DEFAULT_REQUESTS
    repeats: int = DEFAULT_REPEATS
    bucket_count: int = DEFAULT_BUCKETS
    seed: int = 0
    threads: int | None = None
    compile_backend: str = "inductor"
    torch_trace: bool = False
    profile: bool = False
    tokens: bool = False
    ray: str | None = None              # --ray: "local", an address, or "" (RAY_ADDRESS or local)
    slo: Slo | None = None              # --slo: every run's goodput, and capacity's objective
    slo_target: float = 0.9             # --slo-target: the attainment capacity keeps

    @classmethod
    def from_args(cls, args: argparse.Namespace, experiments: tuple[str, ...]) -> BenchSettings:
        """`experiments`: the ids `--experiments` selected (experiments.select_experiments,
        which imports this module: the caller asks it)."""
        quick = bool(getattr(args, "quick", False))
        settings = cls(
            model=getattr(args, "model", None) or (QUICK_MODEL if quick else DEFAULT_MODEL),
            trace=args.trace, device=args.device, out=Path(args.out),
            experiments=experiments, quick=quick,
            requests=args.requests or (QUICK_REQUESTS if quick else DEFAULT_REQUESTS),
            repeats=args.repeats or (QUICK_REPEATS if quick else DEFAULT_REPEATS),
            bucket_count=(getattr(args, "bucket_count", None)
                          or (QUICK_BUCKETS if quick else DEFAULT_BUCKETS)),
            seed=getattr(args, "seed", 0) or 0, threads=getattr(args, "threads", None),
            compile_backend=getattr(args, "compile_backend", None) or "inductor",
            torch_trace=bool(getattr(args, "torch_trace", False)),
            profile=bool(getattr(args, "profile", False)),
            tokens=bool(getattr(args, "tokens", False)), ray=getattr(args, "ray", None),
            slo=getattr(args, "slo", None), slo_target=getattr(args, "slo_target", 0.9))
        if min(settings.requests, settings.repeats, settings.bucket_count) < 1:
            raise BadInput("--requests, --repeats and --bucket-count must be at least 1")
        return settings

    @property
    def matrix(self) -> bool:
        return len(self.cells()) > 1

    def cells(self) -> list[BenchSettings]:
        """`--model a,b --trace chat,batch`: one study per (model, trace), each with DIR/<model>__
        <trace>/ as its --out (DIR itself when there is only one)."""
        models, traces = names(self.model), names(self.trace)
        if len(models) * len(traces) == 1:
            return [replace(self, model=models[0], trace=traces[0])]
        cells = [replace(self, model=m, trace=t, out=self.out / f"{_slug(Path(m).name)}__"
                         f"{_slug(Path(t).stem)}") for m in models for t in traces]
        if len({cell.out for cell in cells}) < len(cells):
            raise BadInput("two of the models or traces have the same name: each (model, "
                              "trace) study needs a folder of its own")
        return cells

    @property
    def e5_count(self) -> int:
        return QUICK_E5_REQUESTS if self.quick else min(self.requests, DEFAULT_E5_REQUESTS)


@dataclass(frozen=True)
class BenchRequest:
    id: str
    input_length: int
    output_length: int
    text: str | None = None


@dataclass(frozen=True)
class RunSpec:
    """What one run serves. Two experiments asking for an equal spec share one run."""
    options: OptConfig
    requests: tuple[BenchRequest, ...]
    requests_name: str                  # "replayed", "E5-long-64-tokens", ...
    edges: tuple[int, ...] = ()         # bucket edges (used when options.bucketing == "on")
    edges_name: str = "none"            # "planner (K=4)", "powers of two", "none"

    @property
    def max_new_tokens(self) -> int:
        return max((r.output_length for r in self.requests), default=1)

    @property
    def key(self) -> str:
        """A file-name-safe, readable id: the options that differ from the defaults, the
        bucket set and the request list."""
        parts = [self.options.label().replace(" ", "_")]
        if self.options.bucketing == "on":
            parts.append(self.edges_name)
        parts.append(self.requests_name)
        return "__".join(_slug(p) for p in parts)


def names(text: str) -> list[str]:
    """`a,b` → ["a", "b"]: a --model or --trace list, without repeats."""
    found = list(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if not found:
        raise BadInput(f"nothing to run in {text!r}")
    return found


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=+-]+", "-", text.replace("=", "")
                  if "(" in text else text).strip("-")


@dataclass(frozen=True)
class Plan:
    """What every experiment shares: the replayed requests and the bucket sets."""
    model: str
    trace: str
    device: str
    quick: bool
    requests: tuple[BenchRequest, ...]
    bucket_count: int
    planner_edges: tuple[int, ...]
    pow2_edges: tuple[int, ...]
    trace_input_lengths: tuple[int, ...]           # the whole fitted trace (whole-trace waste)
    e5_requests: dict[str, tuple[BenchRequest, ...]] = field(default_factory=dict)
    compile_modes: tuple[str, ...] = FULL_COMPILE_MODES
    left_out: tuple[str, ...] = ()
    serve_pow2: bool = True             # False: E4's powers-of-two row is computed, not served
    e6_int8: bool = True                # False: E6 stops at +bf16
    e6_shared_steps: bool = False       # True: E6's --quick chain (e6_combined.QUICK_STEPS)
    e3_dynamic: bool = True             # False: E3 leaves out dynamic=on
    roofline_grid: bool = True          # False: the compiled fp32 step and HF eager only
    e1_cold_start: bool = True          # False: E1 leaves out the compile-cache cold-start pair

    @property
    def planner_name(self) -> str:
        return f"planner (K={self.bucket_count})"

    def notes(self, experiment: str) -> list[str]:
        """What `--quick` left out of one experiment."""
        return [n for n in self.left_out if n.startswith(experiment + ":")]

    def spec(self, options: OptConfig, *, edges: str = "planner",
             requests: tuple[BenchRequest, ...] | None = None,
             requests_name: str = "replayed") -> RunSpec:
        edge_set, name = {"planner": (self.planner_edges, self.planner_name),
                          "pow2": (self.pow2_edges, "powers of two"),
                          "none": ((), "none")}[edges]
        if options.bucketing != "on":
            edge_set, name = (), "none"
        return RunSpec(options=options, requests=requests or self.requests,
                       requests_name=requests_name, edges=edge_set, edges_name=name)


def quick_compile_modes(device: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """--quick keeps compile=default; max-autotune (kernel autotuning, the longest compile)
    is left out, and on a CPU so is reduce-overhead, whose addition — CUDA graphs — needs a GPU."""
    if device.startswith("cuda"):
        return ("default", "reduce-overhead"), (
            "E1: --quick leaves out max-autotune (its kernel autotuning is the longest compile); "
            "run without --quick to include it",)
    return ("default",), (
        "E1: --quick leaves out max-autotune (its kernel autotuning is the longest compile) and, "
        "on a CPU, reduce-overhead (what it adds over default is CUDA graphs, which need a GPU); "
        "run without --quick to include them",)


def select_requests(trace, count: int, seed: int) -> tuple[BenchRequest, ...]:
    """A fixed-seed sample of the trace, in trace order: the same list for every config."""
    indices = sorted(random.Random(seed).sample(range(len(trace.requests)),
                                                min(count, len(trace.requests))))
    return tuple(BenchRequest(id=trace.requests[i].id or f"r{i}",
                              input_length=trace.requests[i].input_length,
                              output_length=max(1, trace.requests[i].output_length),
                              text=trace.requests[i].text) for i in indices)


def output_classes(trace) -> dict[str, int]:
    """Short, medium and long outputs of this traffic: its 10th, 50th and 95th percentiles."""
    found = percentiles(trace.output_lengths(), (10, 50, 95)) or (2.0, 3.0, 4.0)
    short, medium, long = (max(2, int(round(v))) for v in found)
    medium = max(medium, short + 1)
    long = max(long, medium + 1)
    return {"short": short, "medium": medium, "long": long}


def make_plan(*, model: str, trace_name: str, device: str, quick: bool, requests: int,
              bucket_count: int, seed: int, e5_count: int) -> Plan:
    """Load and fit the trace (a bad one is refused here, before anything is written)."""

    trace, _fit = fit_to_model(load_trace(trace_name), max_input=MAX_INPUT,
                               max_output=MAX_OUTPUT, policy="clip")
    if not trace.requests:
        raise BadInput(f"trace {trace_name!r} has no requests to replay")
    chosen = select_requests(trace, requests, seed)
    lengths = [r.input_length for r in chosen]
    inputs = chosen[:e5_count]
    e5 = {name: tuple(BenchRequest(id=f"{r.id}-{name}", input_length=r.input_length,
                                   output_length=tokens, text=r.text) for r in inputs)
          for name, tokens in output_classes(trace).items()
          if not quick or name in QUICK_E5_CLASSES}
    modes, left_out = quick_compile_modes(device) if quick else (FULL_COMPILE_MODES, ())
    if quick:
        left_out = left_out + QUICK_LEFT_OUT
    return Plan(model=model, trace=trace_name, device=device, quick=quick, requests=chosen,
                bucket_count=bucket_count,
                planner_edges=tuple(plan_buckets(lengths, bucket_count).edges),
                pow2_edges=tuple(powers_of_two_plan(lengths).edges),
                trace_input_lengths=tuple(trace.input_lengths()), e5_requests=e5,
                compile_modes=modes, left_out=left_out, serve_pow2=not quick, e6_int8=not quick,
                e6_shared_steps=quick, e3_dynamic=not quick, roofline_grid=not quick,
                e1_cold_start=not quick)
