"""`make gpu-check`'s decode matrix: every compile mode × fp32/fp16/bf16 for both decode paths
(and TF32 for fp32), each config in a process of its own (gpu_decode_run.py). Configs compile
side by side and are timed one at a time; tokens are compared with fp32 eager's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

MODES = ("off", "default", "reduce-overhead", "max-autotune")
PRECISIONS = ("fp32", "fp16", "bf16")
PATHS = ("fullgraph", "hf-generate")


@dataclass(frozen=True)
class DecodeConfig:
    decode: str
    precision: str
    compile: str
    tf32: str = "off"
    blas: str = "default"       # torch.backends.cuda.preferred_blas_library, as an experiment

    @property
    def name(self) -> str:
        tf32 = " tf32" if self.tf32 == "on" else ""
        blas = "" if self.blas == "default" else f" blas={self.blas}"
        return f"{self.decode} {self.precision}{tf32} compile={self.compile}{blas}"


def matrix(modes: tuple[str, ...] = MODES, paths: tuple[str, ...] = PATHS
           ) -> list[DecodeConfig]:
    """The fullgraph loop in every mode and precision, TF32 beside fp32 where it compiles;
    HF generate() eager and compiled (reduce-overhead only to see it refused: max-autotune is
    refused the same way)."""
    configs = [DecodeConfig("fullgraph", p, m) for m in modes for p in PRECISIONS]
    configs += [DecodeConfig("fullgraph", "fp32", m, "on") for m in ("reduce-overhead",)
                if m in modes]
    configs += [DecodeConfig("hf-generate", p, m) for m in ("off", "default") for p in PRECISIONS
                if m in modes]
    if "reduce-overhead" in modes:
        configs.append(DecodeConfig("hf-generate", "fp32", "reduce-overhead"))
    if "default" in modes:      # is half precision's host time in default mode cuBLAS's?
        configs += [DecodeConfig("fullgraph", "fp16", "default", blas=b)
                    for b in ("cublas", "cublaslt")]
    return [c for c in configs if c.decode in paths]


def run_matrix(model: str, requests: int, output_tokens: int, *, parallel: int,
               timeout_s: float, log, modes: tuple[str, ...] = MODES,
               paths: tuple[str, ...] = PATHS) -> dict[str, dict]:
    # the longest compiles first, so the slowest config is not the last to start
    configs = sorted(matrix(modes, paths), key=lambda c: (c.compile != "max-autotune",
                                              c.decode != "hf-generate"))
    folder = Path(tempfile.mkdtemp(prefix="gpu-decode-"))
    lock = folder / "gpu.lock"

    def one(config: DecodeConfig) -> tuple[str, dict]:
        out = folder / (config.name.replace(" ", "_").replace("=", "-") + ".json")
        command = [sys.executable, "-m", "probe.engine.measure.gpu_decode_run",
                   "--model", model, "--decode", config.decode, "--precision", config.precision,
                   "--compile", config.compile, "--tf32", config.tf32, "--blas", config.blas,
                   "--requests", str(requests), "--output-tokens", str(output_tokens),
                   "--lock", str(lock), "--out", str(out)]
        started = time.perf_counter()
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s,
                                  env={**os.environ, "PYTHONUNBUFFERED": "1"})
            result = (json.loads(out.read_text()) if out.exists()
                      else {"crashed": f"exit {done.returncode}: {done.stderr[-400:]}"})
        except subprocess.TimeoutExpired:
            result = {"crashed": f"did not finish in {timeout_s:.0f} s"}
        result["wall_s"] = time.perf_counter() - started
        log(f"  {config.name:44} {summary(result)}")
        return config.name, result

    with ThreadPoolExecutor(parallel) as pool:
        results = dict(pool.map(one, configs))
    reference = results.get(DecodeConfig("fullgraph", "fp32", "off").name, {}).get("tokens")
    for result in results.values():
        tokens = result.pop("tokens", None)
        result["tokens_equal_fp32_eager"] = (tokens == reference) if tokens and reference else None
    return results


def summary(result: dict) -> str:
    if "crashed" in result:
        return f"CRASHED {result['crashed'][:200]}"
    ms = result.get("ms_per_token")
    return (f"{'—' if ms is None else f'{ms:.3f}'} ms/token  "
            f"{result.get('kernels_per_token', 0):.0f} kernels/token  "
            f"compile {result.get('compile_s', 0):.1f} s  failed {result.get('failed')}  "
            f"{'; '.join(result.get('notes', []))[:120]}")
