"""One decode config of `make gpu-check`, in a process of its own: `python -m
tools.gpu_check.decode_run --decode fullgraph --precision fp16 --compile
reduce-overhead --lock FILE --out FILE.json`.

Configs compile side by side (compiling is host work: the machine's cores). Each then says it
is ready (FILE.ready-NAME) and waits for FILE.go, which the parent makes once every config is
ready, so no compile runs while one is timed; then each times its requests holding an exclusive
lock on FILE, so no two configs share the GPU or the host while timed.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import sys
import time
from pathlib import Path

from probe.common.percentile import median
from probe.contract.options import OptConfig, parse_opts
from probe.contract.records import RequestRecord
from tools.gpu_check.energy import timed_energy


def warm_tpot_ms(served: list[RequestRecord]) -> float | None:
    """The median ms/token of the timed requests that were served."""
    return median([r.tpot_ms for r in served if r.ok and r.tpot_ms is not None])


def cuda_graph_skips() -> list[str]:
    """Why inductor ran a compiled graph without CUDA graphs, as its compile metrics say."""
    import torch._dynamo.utils as dynamo_utils
    reasons = [getattr(m, "cudagraph_skip_reason", None)
               for m in dynamo_utils.get_compilation_metrics()]
    return sorted({r for r in reasons if r})


def config_options(args: argparse.Namespace) -> OptConfig:
    """The engine options of the config the arguments name, its --opts included."""
    return parse_opts([f"decode={args.decode}", f"precision={args.precision}",
                       f"compile={args.compile}", f"tf32={args.tf32}",
                       *[o for o in args.opts.split(",") if o]])


def run(args: argparse.Namespace) -> dict:
    from probe.engine.engine import Engine, EngineSettings
    from probe.engine.model.requests import EngineRequest
    from probe.engine.observe.cuda_graphs import census
    from tools.gpu_check.kernel_profile import profile_kernels

    if args.blas != "default":      # an experiment of the check, not an option of the engine
        import torch
        torch.backends.cuda.preferred_blas_library(args.blas)
    options = config_options(args)
    engine = Engine(EngineSettings(model=args.model, device=args.device,
                                   max_new_tokens=args.output_tokens, keep_tokens=True,
                                   drift_every=0), options)
    notes = [n.text for n in engine.session.freeze().notices]

    def request(i: int) -> EngineRequest:
        return EngineRequest(f"g{i}", i, args.input_tokens, args.output_tokens,
                             engine.clock.now_s())

    started = time.perf_counter()
    warm = engine.serve([request(0)])           # compiles (and records CUDA graphs)
    compile_wall_s = time.perf_counter() - started
    Path(f"{args.lock}.ready-{Path(args.out).stem}").touch()
    while not Path(f"{args.lock}.go").exists():
        time.sleep(0.2)
    with open(args.lock, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)        # the GPU to this config alone
        ledger_before = engine.energy.config_energy(engine.config_id)
        timed = [engine.serve([request(i)])[0] for i in range(1, args.requests + 1)]
        energy = timed_energy(timed, ledger_before, engine.energy.config_energy(engine.config_id))
        profile, profile_error = None, None
        if engine.device.type == "cuda":
            try:
                profile = profile_kernels(lambda: engine.serve([request(args.requests + 1)]))
            except Exception as exc:  # the timings stand without the kernel count
                profile_error = f"{type(exc).__name__}: {exc}"[:300]
        fcntl.flock(lock, fcntl.LOCK_UN)
    served = warm + timed
    session = engine.session.freeze()
    compiles = [e for e in session.events if e.kind != "graph_break"]
    kernels, kernel_ms = profile.per(args.output_tokens) if profile else (None, None)
    result = {
        "options": engine.options.label(), "notes": notes,
        "ms_per_token": warm_tpot_ms(timed),
        "energy": energy,
        "first_request_ms": warm[0].latency_ms, "first_request_wall_s": compile_wall_s,
        "compile_s": sum(e.duration_s or 0 for e in compiles),
        "compiles": len(compiles),
        "failed": sum(not r.ok for r in served),
        "errors": sorted({r.error for r in served if r.error})[:3],
        "tokens": [list(r.tokens) if r.tokens is not None else None for r in timed],
        "kernels_per_token": kernels, "kernel_ms_per_token": kernel_ms,
        "profiled_ms_per_token": profile.wall_ms / args.output_tokens if profile else None,
        "profile_error": profile_error,
        "cuda_graphs": None if (graphs := census(engine.device)) is None else {
            "graphs": graphs.graphs, "pool_bytes": graphs.pool_bytes},
        "cuda_graph_skips": cuda_graph_skips(),
    }
    engine.close()
    return result


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        result = run(args)
    except Exception as exc:  # the parent reads the failure from the file, with its reason
        result = {"crashed": f"{type(exc).__name__}: {exc}"[:500]}
    Path(args.out).write_text(json.dumps(result))
    return 0


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tools.gpu_check.decode_run")
    parser.add_argument("--model", default="t5-small")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--decode", default="fullgraph")
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--compile", default="off")
    parser.add_argument("--tf32", default="off")
    parser.add_argument("--blas", default="default", choices=("default", "cublas", "cublaslt"))
    parser.add_argument("--opts", default="", help="more engine options, comma-separated")
    parser.add_argument("--requests", type=int, default=5)
    parser.add_argument("--input-tokens", type=int, default=64)
    parser.add_argument("--output-tokens", type=int, default=64)
    parser.add_argument("--lock", required=True)
    parser.add_argument("--out", required=True)
    return parser


if __name__ == "__main__":
    sys.exit(main())
