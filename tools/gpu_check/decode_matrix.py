"""`make gpu-check`'s decode matrix: every compile mode × fp32/fp16/bf16 for both decode paths
(and TF32 for fp32), each config in a process of its own (gpu_decode_run.py). Configs compile
side by side and are timed one at a time; tokens are compared with fp32 eager's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tools.gpu_check.energy import energy_text

MODES = ("off", "default", "reduce-overhead", "max-autotune")
PRECISIONS = ("fp32", "fp16", "bf16")
PATHS = ("fullgraph", "hf-generate")
LEAN = ("guards=lean", "wrapper=cpp")      # the lean step's host levers (docs/engine-vs-peer.md)


@dataclass(frozen=True)
class DecodeConfig:
    decode: str
    precision: str
    compile: str
    tf32: str = "off"
    blas: str = "default"       # torch.backends.cuda.preferred_blas_library, as an experiment
    extra: tuple[str, ...] = ()     # more engine options, "guards=lean", …

    @property
    def name(self) -> str:
        tf32 = " tf32" if self.tf32 == "on" else ""
        blas = "" if self.blas == "default" else f" blas={self.blas}"
        extra = "".join(f" {option}" for option in self.extra)
        return f"{self.decode} {self.precision}{tf32} compile={self.compile}{blas}{extra}"


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
    if "default" in modes:
        # Half precision's extra host time in default mode is not cuBLAS's (blas=cublas and
        # cublaslt, 2026-12-04, docs/gpu.md): is it the Python wrapper's and the guards'?
        configs += [DecodeConfig("fullgraph", p, "default", extra=LEAN) for p in PRECISIONS]
    return [c for c in configs if c.decode in paths]


def run_matrix(model: str, requests: int, output_tokens: int, *, ready_s: float,
               timeout_s: float, log, modes: tuple[str, ...] = MODES,
               paths: tuple[str, ...] = PATHS, device: str = "cuda",
               budget_ends: bool = False) -> dict[str, dict]:
    """Every config at once, each in its own process; `ready_s`: how long timing waits for the
    slowest compile before it starts without it. `budget_ends`: `timeout_s` is gpu-check's
    budget, not a config's limit, so a config it ends is `unmeasured`, not crashed."""
    # the longest compiles first, so the slowest config is not the last to start
    configs = sorted(matrix(modes, paths), key=lambda c: (c.compile != "max-autotune",
                                              c.decode != "hf-generate"))
    folder = Path(tempfile.mkdtemp(prefix="gpu-decode-"))
    lock = folder / "gpu.lock"

    def one(config: DecodeConfig) -> tuple[str, dict]:
        out = folder / (config.name.replace(" ", "_").replace("=", "-") + ".json")
        command = [sys.executable, "-m", "tools.gpu_check.decode_run",
                   "--device", device, "--model", model, "--decode", config.decode, "--precision", config.precision,
                   "--compile", config.compile, "--tf32", config.tf32, "--blas", config.blas,
                   "--opts", ",".join(config.extra),
                   "--requests", str(requests), "--output-tokens", str(output_tokens),
                   "--lock", str(lock), "--out", str(out)]
        started = time.perf_counter()
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s,
                                  env={**os.environ, "PYTHONUNBUFFERED": "1"})
            result = (json.loads(out.read_text()) if out.exists()
                      else {"crashed": f"exit {done.returncode}: {done.stderr[-400:]}"})
        except subprocess.TimeoutExpired:
            result = ({"unmeasured": f"not done when the budget's {timeout_s:.0f} s ended"}
                      if budget_ends else {"crashed": f"did not finish in {timeout_s:.0f} s"})
        result["wall_s"] = time.perf_counter() - started
        log(f"  {config.name:44} {summary(result)}")
        return config.name, result

    def release_when_ready() -> None:
        """Timing starts once every config compiled (or `ready_s` passed): no compile then
        shares the host or the GPU with a timed config."""
        deadline = time.monotonic() + ready_s
        while time.monotonic() < deadline:
            ready = len(list(folder.glob("gpu.lock.ready-*")))
            ended = len(list(folder.glob("*.json")))
            if ready + ended >= len(configs):
                break
            time.sleep(0.5)
        (folder / "gpu.lock.go").touch()
        log(f"  timing starts: {len(list(folder.glob('gpu.lock.ready-*')))} of {len(configs)} "
            "configs compiled")

    releaser = threading.Thread(target=release_when_ready, daemon=True)
    releaser.start()
    with ThreadPoolExecutor(len(configs)) as pool:
        results = dict(pool.map(one, configs))
    releaser.join()
    reference = results.get(DecodeConfig("fullgraph", "fp32", "off").name, {}).get("tokens")
    for result in results.values():
        tokens = result.pop("tokens", None)
        result["tokens_equal_fp32_eager"] = (tokens == reference) if tokens and reference else None
    return results


def summary(result: dict) -> str:
    if "crashed" in result:
        return f"CRASHED {result['crashed'][:200]}"
    if "unmeasured" in result:
        return f"not measured: {result['unmeasured']}"
    def number(key: str, digits: int) -> str:
        value = result.get(key)
        return "—" if value is None else f"{value:.{digits}f}"
    return (f"{number('ms_per_token', 3)} ms/token  {number('kernels_per_token', 0)} kernels "
            f"{number('kernel_ms_per_token', 3)} ms on the GPU a token  "
            f"compile {number('compile_s', 1)} s  failed {result.get('failed')}  "
            f"{energy_text(result.get('energy'))}  "
            f"{'; '.join(result.get('notes', []))[:120]}")
