"""`make gpu-check`: the checks that need a GPU, as one script to run when a machine has one.

1. The device panel's NVML figures against `nvidia-smi` read at the same moment.
2. The fullgraph decode step eager, compiled (default) and compiled with reduce-overhead
   (CUDA graphs), in fp32 and fp16: warm ms/token from CUDA-synchronised marks, and tokens of
   each against fp32 eager.
3. The memory roofline at the GPU's measured bandwidth, per precision, and each step's ratio.

Writes OUT/gpu-check.json and prints a table. Without a CUDA device it says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from probe.contract.records import RequestRecord
from probe.contract.units import fmt_ratio
from workloads.atomic import write_atomic

CONFIGS = (("fp32", "off"), ("fp32", "default"), ("fp32", "reduce-overhead"),
           ("fp16", "default"), ("fp16", "reduce-overhead"))
SMI_FIELDS = ("utilization.gpu", "memory.used", "memory.total", "power.draw", "temperature.gpu")

if TYPE_CHECKING:
    import torch


def nvidia_smi() -> dict[str, float] | str:
    if shutil.which("nvidia-smi") is None:
        return "nvidia-smi not found"
    done = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(SMI_FIELDS)}",
                           "--format=csv,noheader,nounits", "-i", "0"],
                          capture_output=True, text=True, timeout=30)
    if done.returncode:
        return done.stderr.strip() or f"exit {done.returncode}"
    values = [v.strip() for v in done.stdout.strip().splitlines()[0].split(",")]
    return {name: float(v) for name, v in zip(SMI_FIELDS, values) if v not in ("[N/A]", "")}


def nvml_against_smi(device: torch.device) -> dict:
    from probe.engine.observe.device_probe import DeviceProbe
    sample = DeviceProbe(device).sample()
    smi = nvidia_smi()
    ours = {"utilization.gpu": sample.util_pct,
            "memory.used": None if sample.mem_used_bytes is None else sample.mem_used_bytes / 2**20,
            "memory.total": None if sample.mem_total_bytes is None else sample.mem_total_bytes / 2**20,
            "power.draw": sample.power_w, "temperature.gpu": sample.temperature_c}
    return {"infertop": ours, "nvidia_smi": smi}


def decode_timings(model: str, requests: int, output_tokens: int) -> dict:
    from probe.contract.options import OptConfig
    from probe.engine.engine import Engine, EngineSettings
    from probe.engine.requests import EngineRequest

    results: dict[str, dict] = {}
    reference: list[tuple[int, ...] | None] | None = None
    for precision, compile_mode in CONFIGS:
        options = OptConfig(decode="fullgraph", precision=precision, compile=compile_mode)
        engine = Engine(EngineSettings(model=model, device="cuda", max_new_tokens=output_tokens,
                                       keep_tokens=True), options)
        served = []
        for i in range(requests + 1):       # the first warms (and compiles)
            request = EngineRequest(f"g{i}", i, 64, output_tokens, engine.clock.now_s())
            served += engine.serve([request])
        tokens = [r.tokens for r in served]
        reference = reference or tokens
        results[f"{precision} compile={compile_mode}"] = {
            "ms_per_token": warm_tpot_ms(served), "failed": sum(not r.ok for r in served),
            "first_request_ms": served[0].latency_ms,
            "compile_s": sum(e.duration_s or 0 for e in engine.session.freeze().events),
            "tokens_equal_fp32_eager": tokens == reference,
            "errors": sorted({r.error for r in served if r.error})[:3]}
        engine.close()
    return results


def warm_tpot_ms(served: Sequence[RequestRecord]) -> float | None:
    """The median ms/token of the requests after the first (which warms and compiles); None
    when none has one (all failed, or one output token each)."""
    values = sorted(r.tpot_ms for r in served[1:] if r.ok and r.tpot_ms is not None)
    return values[len(values) // 2] if values else None


def roofline(model: str, device: torch.device, timings: dict[str, dict]) -> dict:
    from probe.engine.measure.step_roofline import (
        measure_bandwidth,
        step_bytes_by_precision,
        working_set_bandwidth,
    )
    from probe.engine.models import load_model
    loaded = load_model(model).model
    module: torch.nn.Module = loaded    # nn.Module's `to`, as in Engine.__init__
    module.to(device)
    # fp32 and bf16 are always built (only int8 can be refused, with a reason): their bytes
    by_precision = {p: b for p, b in step_bytes_by_precision(loaded).items() if isinstance(b, int)}
    by_precision["fp16"] = by_precision["bf16"]
    # the roofline's bandwidth, as everywhere: re-reading the fp32 step's working set (on an
    # H200 it is larger than L2, so this is HBM); the big-buffer figure beside it
    bandwidth = working_set_bandwidth(device, by_precision["fp32"]).read_gb_s
    big_buffer = measure_bandwidth(device).read_gb_s
    precisions: dict[str, dict] = {}
    for name, result in timings.items():
        precision = name.split()[0]
        roof_ms = by_precision[precision] / (bandwidth * 1e9) * 1e3
        tpot = result["ms_per_token"]
        precisions[name] = {"roofline_ms": roof_ms, "ms_per_token": tpot,
                            "ratio": tpot / roof_ms if tpot else None}
    return {"bandwidth_gb_s": bandwidth, "big_buffer_gb_s": big_buffer, "precisions": precisions}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m probe.engine.measure.gpu_check", description=__doc__)
    parser.add_argument("--model", default="t5-small")
    parser.add_argument("--requests", type=int, default=5)
    parser.add_argument("--output-tokens", type=int, default=64)
    parser.add_argument("--out", default="gpu-check-out")
    args = parser.parse_args(argv)
    import torch
    if not torch.cuda.is_available():
        print("gpu-check: no CUDA device here; nothing to check (run it on a GPU machine)")
        return 0
    device = torch.device("cuda:0")
    started = time.time()
    device_name = torch.cuda.get_device_name(device)
    nvml = nvml_against_smi(device)
    timings = decode_timings(args.model, args.requests, args.output_tokens)
    roof = roofline(args.model, device, timings)
    report = {"device": device_name, "torch": torch.__version__, "nvml": nvml, "decode": timings,
              "roofline": roof, "wall_s": time.time() - started}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "gpu-check.json", [json.dumps(report, indent=1), "\n"])
    print(f"{device_name} · torch {torch.__version__}")
    print(f"NVML (infertop) vs nvidia-smi: {json.dumps(nvml)}")
    for name, row in roof["precisions"].items():
        decode = timings[name]
        ms, ratio = row["ms_per_token"], row["ratio"]
        print(f"{name:32} {ms if ms is None else round(ms, 3)} ms/token  "
              f"{fmt_ratio(ratio)} roofline  "
              f"compile {decode['compile_s']:.1f} s  tokens = fp32 eager: "
              f"{decode['tokens_equal_fp32_eager']}  failed {decode['failed']}")
    print(f"bandwidth {roof['bandwidth_gb_s']:.0f} GB/s; wrote {out / 'gpu-check.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
