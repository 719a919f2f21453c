"""What a study serves: its settings (with `--quick`'s defaults), the replayed requests, the
bucket sets, and one run's spec. Every experiment reads the same Plan."""

from __future__ import annotations

import argparse
import random
import re
from dataclasses import dataclass, replace
from pathlib import Path

from probe.common.errors import BadInput
from probe.contract.objective import Slo
from probe.contract.options import OptConfig
from workloads.buckets import plan_buckets, powers_of_two_plan
from workloads.fitting import fit_to_model
from workloads.trace import load_trace

QUICK_MODEL, DEFAULT_MODEL = "t5-tiny", "t5-small"
QUICK_REQUESTS, DEFAULT_REQUESTS = 3, 40
QUICK_REPEATS, DEFAULT_REPEATS = 2, 3
QUICK_BUCKETS, DEFAULT_BUCKETS = 2, 4
MAX_INPUT, MAX_OUTPUT = 512, 512


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
    stopping: str = "sequential"        # --stopping: sequential or fixed (probe/runs/stopping.py)

    @classmethod
    def from_args(cls, args: argparse.Namespace, experiments: tuple[str, ...]) -> BenchSettings:
        """`experiments`: the ids `--experiments` selected (experiments.select_experiments:
        the caller asks it)."""
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
            slo=getattr(args, "slo", None), slo_target=getattr(args, "slo_target", 0.9),
            stopping=getattr(args, "stopping", None) or "sequential")
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
    requests_name: str                  # "replayed", or what an experiment named its own list
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
    """What every experiment shares: the replayed requests and the bucket sets. What an
    experiment serves under `quick` is its own module's choice."""
    model: str
    trace: str
    device: str
    quick: bool
    requests: tuple[BenchRequest, ...]
    bucket_count: int
    planner_edges: tuple[int, ...]
    pow2_edges: tuple[int, ...]
    trace_input_lengths: tuple[int, ...]           # the whole fitted trace (whole-trace waste)
    trace_output_lengths: tuple[int, ...]          # and its outputs

    @property
    def planner_name(self) -> str:
        return f"planner (K={self.bucket_count})"

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


def select_requests(trace, count: int, seed: int) -> tuple[BenchRequest, ...]:
    """A fixed-seed sample of the trace, in trace order: the same list for every config."""
    indices = sorted(random.Random(seed).sample(range(len(trace.requests)),
                                                min(count, len(trace.requests))))
    return tuple(BenchRequest(id=trace.requests[i].id or f"r{i}",
                              input_length=trace.requests[i].input_length,
                              output_length=max(1, trace.requests[i].output_length),
                              text=trace.requests[i].text) for i in indices)


def make_plan(*, model: str, trace_name: str, device: str, quick: bool, requests: int,
              bucket_count: int, seed: int) -> Plan:
    """Load and fit the trace (a bad one is refused here, before anything is written)."""
    trace, _fit = fit_to_model(load_trace(trace_name), max_input=MAX_INPUT,
                               max_output=MAX_OUTPUT, policy="clip")
    if not trace.requests:
        raise BadInput(f"trace {trace_name!r} has no requests to replay")
    chosen = select_requests(trace, requests, seed)
    lengths = [r.input_length for r in chosen]
    return Plan(model=model, trace=trace_name, device=device, quick=quick, requests=chosen,
                bucket_count=bucket_count,
                planner_edges=tuple(plan_buckets(lengths, bucket_count).edges),
                pow2_edges=tuple(powers_of_two_plan(lengths).edges),
                trace_input_lengths=tuple(trace.input_lengths()),
                trace_output_lengths=tuple(trace.output_lengths()))
