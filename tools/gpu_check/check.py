"""`make gpu-check`: the GPU acceptance, one command. Without a CUDA device it says so and exits 0.

In this order, within `--budget` seconds (budget.py):
1. NVML as the device panel reads it against `nvidia-smi`, idle and under load.
2. The batching loop's own host work a step at 8, 64 and 256 slots, the model's step replaced
   by nothing, and the per-call cost of what it reads each step (host_cost.py).
3. A SIGTERM during a compile: the seconds until the process ended.
4. The decode matrix (decode_matrix.py): every compile mode × fp32/fp16/bf16 for both decode
   paths: ms/token, failures, tokens against fp32 eager, kernels per token and their GPU
   time, beside the HBM roofline and the kernel floor (kernels × one kernel's measured cost).
5. Continuous batching on the Azure conversation trace: first the paged layout's tokens
   against the static layout's (layouts.py), then at full load (batching.py): tokens/s and
   NVML utilization at 16 and 64 slots and at the default sizing, with CUDA graphs and (at
   the default sizing) without.
6. The live dashboard, driven headless through Textual's Pilot, its screens saved.
J/token beside tokens/s in 4 and 5, from NVML's energy counter (gpu_check/energy.py); what the
issue expects of it (falling with slots and under CUDA graphs) is reported, never failed.

Writes OUT/gpu-check.json and OUT/gpu-check.log, and exits 1 when a promise fails (the
`promises` of the JSON say which; its `energy_expectations` never fail the run, and what the
budget left unmeasured is listed in `unmeasured`, neither passed nor failed).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from probe.checks.interrupts import signal_of, signals_as_interrupt
from probe.checks.stop_supervisor import run_supervised
from probe.common.atomic import write_atomic
from tools.gpu_check.budget import DEFAULT_BUDGET_S, PLAN, Budget
from tools.gpu_check.decode_matrix import run_matrix
from tools.gpu_check.energy import expectations
from tools.gpu_check.sigterm import sigterm_during_compile
from tools.gpu_check.stops import ending as stopped_ending
from tools.gpu_check.stops import salvage, scratch_folder, stopped_text

SMI_FIELDS = ("utilization.gpu", "memory.used", "memory.reserved", "memory.total", "power.draw",
              "temperature.gpu")
SECTIONS = tuple(PLAN)              # in the order they run
HOST_SLOTS = (8, 64, 256)
READY_SHARE = 0.55      # of the decode matrix's time: compiles side by side; the rest is timing
MIN_BATCHING_RUN_S = 25.0       # a replay's start (model, CUDA graphs) and some serving
STOP_S = 8.0            # a replay stopped at its limit saves what it served within this
DASHBOARD_START_S = 30.0        # the dashboard's start before its timed seconds

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
    return {name: float(v) for name, v in zip(SMI_FIELDS, values)
            if v not in ("[N/A]", "[Not Supported]", "")}


def nvml_against_smi(device: torch.device) -> dict:
    from probe.engine.observe.device_probe import DeviceProbe
    sample = DeviceProbe(device).sample()
    smi = nvidia_smi()
    mib = 2 ** 20
    ours = {"utilization.gpu": sample.util_pct,
            "memory.used": None if sample.mem_used_bytes is None else sample.mem_used_bytes / mib,
            "memory.reserved": (None if sample.mem_reserved_bytes is None
                                else sample.mem_reserved_bytes / mib),
            "memory.total": None if sample.mem_total_bytes is None else sample.mem_total_bytes / mib,
            "power.draw": sample.power_w, "temperature.gpu": sample.temperature_c}
    return {"infertop": ours, "nvidia_smi": smi}


def memory_agrees(reading: dict, tolerance_mib: float = 64.0) -> bool | None:
    smi, ours = reading["nvidia_smi"], reading["infertop"]
    if not isinstance(smi, dict) or ours["memory.used"] is None or "memory.used" not in smi:
        return None
    return abs(ours["memory.used"] - smi["memory.used"]) <= tolerance_mib


def roofline(model: str, device: torch.device) -> dict:
    from probe.engine.measure.step_roofline import (
        measure_bandwidth,
        working_set_bandwidth,
    )
    from probe.engine.model.loading import load_model
    from probe.engine.precision_copies import step_bytes_by_precision
    loaded = load_model(model).model
    module: torch.nn.Module = loaded    # nn.Module's `to`, as in Engine.__init__
    module.to(device)
    by_precision = {p: b for p, b in step_bytes_by_precision(loaded).items() if isinstance(b, int)}
    by_precision["fp16"] = by_precision["bf16"]
    bandwidth = working_set_bandwidth(device, by_precision["fp32"]).read_gb_s
    return {"bandwidth_gb_s": bandwidth, "big_buffer_gb_s": measure_bandwidth(device).read_gb_s,
            "roofline_ms": {p: b / (bandwidth * 1e9) * 1e3 for p, b in by_precision.items()}}


def judge_decode(decode: dict, roof: dict, floor_us: float) -> None:
    """Each config's bounds: its roofline and kernel floor, and which it is closer to."""
    from tools.gpu_check.kernel_profile import closer_bound
    for name, row in decode.items():
        precision = name.split()[1]
        roof_ms = roof["roofline_ms"][precision]
        row["roofline_ms"] = roof_ms
        kernels, ms = row.get("kernels_per_token"), row.get("ms_per_token")
        if kernels is None or ms is None:
            continue
        row["kernel_floor_ms"] = kernels * floor_us / 1e3
        row["x_roofline"] = ms / roof_ms
        row["closer_to"] = closer_bound(ms, roof_ms, kernels, floor_us)


def promises(report: dict) -> dict[str, bool]:
    """The issue's promises, read from the report: what makes the command exit 1."""
    decode = report.get("decode", {})
    checks: dict[str, bool] = {}
    graphs = {k: v for k, v in decode.items() if "fullgraph" in k and "reduce-overhead" in k
              and "unmeasured" not in v}
    if graphs:
        checks["reduce-overhead serves every request"] = all(
            v.get("failed") == 0 and "crashed" not in v for v in graphs.values())
        checks["reduce-overhead fp32 tokens equal fp32 eager"] = all(
            v.get("tokens_equal_fp32_eager") for k, v in graphs.items()
            if " fp32 " in k and " tf32 " not in k)     # TF32 changes the arithmetic
        best = min((v["ms_per_token"] for k, v in graphs.items()
                    if v.get("ms_per_token") and (" bf16 " in k or " fp16 " in k)), default=None)
        checks["half precision under CUDA graphs at most 0.4 ms/token"] = (
            best is not None and best <= 0.4)
    for mode in ("off", "default", "reduce-overhead"):
        fp32 = decode.get(f"fullgraph fp32 compile={mode}", {}).get("ms_per_token")
        for half in ("fp16", "bf16"):
            ms = decode.get(f"fullgraph {half} compile={mode}", {}).get("ms_per_token")
            if fp32 and ms:
                # 5% of room for the run-to-run spread of one timed config
                checks[f"{half} at most fp32's ms/token, compile={mode}"] = ms <= fp32 * 1.05
    for key in ("idle", "load"):
        agrees = report.get("nvml", {}).get(f"{key}_memory_agrees")
        if agrees is not None:
            checks[f"NVML memory used agrees with nvidia-smi ({key})"] = agrees
    layouts = report.get("layouts")
    if layouts is not None:
        checks["continuous batching's paged layout serves the static layout's tokens"] = (
            layouts.get("equal") is True)
    sigterm = report.get("sigterm", {}).get("seconds")
    if sigterm is not None:
        checks["SIGTERM during a compile ends within 10 s"] = sigterm <= 10
    return checks


def unmeasured(report: dict) -> list[str]:
    """What the budget left unmeasured, a line each: never passed, never failed, said."""
    lines = [f"{name}: {reason}" for name, reason in report.get("skipped", {}).items()]
    if "skipped" in report.get("sigterm", {}):
        lines.append(f"sigterm: {report['sigterm']['skipped']}")
    lines += [f"decode {name}: {row['unmeasured']}"
              for name, row in report.get("decode", {}).items()
              if isinstance(row, dict) and "unmeasured" in row]
    lines += [f"batching {run['max_batch']} slots {','.join(run['options'])}: "
              f"{run['unmeasured']}" for run in report.get("batching", [])
              if isinstance(run, dict) and "unmeasured" in run]
    return lines


# the flags' seconds: each finite and above 0 (--budget: 0 is no budget); NaN would skip every
# section (no comparison with it holds), infinity would never end
SECONDS_FLAGS = {"budget": 0.0, "ready_timeout": None, "config_timeout": None,
                 "dashboard_seconds": None, "batching_timeout": None}
COUNT_FLAGS = ("requests", "output_tokens")


def argument_problem(args: argparse.Namespace) -> str | None:
    """`--flag value: why` for the first number flag out of its range; None when all are in."""
    for name, also in SECONDS_FLAGS.items():
        value = getattr(args, name)
        if not (math.isfinite(value) and (value > 0 or value == also)):
            allowed = "0 (no budget) or a finite number above 0" if also == 0.0 else \
                "a finite number above 0"
            return f"--{name.replace('_', '-')} {value:g}: seconds must be {allowed}"
    for name in COUNT_FLAGS:
        if getattr(args, name) < 1:
            return f"--{name.replace('_', '-')} {getattr(args, name)}: must be 1 or more"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.gpu_check.check",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="t5-small")
    parser.add_argument("--requests", type=int, default=5)
    parser.add_argument("--output-tokens", type=int, default=64)
    parser.add_argument("--ready-timeout", type=float, default=240,
                        help="seconds the decode matrix's timing waits for its slowest compile")
    parser.add_argument("--modes", default="off,default,reduce-overhead,max-autotune",
                        help="the decode matrix's compile modes")
    parser.add_argument("--paths", default="fullgraph,hf-generate",
                        help="the decode matrix's decode paths")
    parser.add_argument("--config-timeout", type=float, default=300,
                        help="seconds one decode config may take, its compile included")
    parser.add_argument("--only", default=",".join(SECTIONS),
                        help=f"sections to run, of {','.join(SECTIONS)}")
    parser.add_argument("--slots", default="16,64",
                        help="continuous batching's slot counts, besides the default sizing")
    parser.add_argument("--batching-opts",
                        default="batching=continuous,precision=bf16,compile=reduce-overhead",
                        help="the batching runs' --opt values, comma-separated")
    parser.add_argument("--dashboard-seconds", type=float, default=60.0)
    parser.add_argument("--batching-contrast", default="batching=continuous,precision=bf16",
                        help="one more run at the default sizing: the same without CUDA graphs")
    parser.add_argument("--batching-timeout", type=float, default=120,
                        help="seconds one batching replay may take")
    parser.add_argument("--budget", type=float, default=DEFAULT_BUDGET_S,
                        help="seconds the whole check may take, shared by its sections "
                             "(0: no budget, each section its own limits)")
    parser.add_argument("--out", default="gpu-check-out")
    args = parser.parse_args(argv)
    problem = argument_problem(args)
    if problem is not None:
        print(f"gpu-check: {problem}", file=sys.stderr)
        return 2
    # stops as every command that runs an engine (gpu_check/stops.py): from the command line
    # in a child of its own, supervised; every temporary folder inside one scratch folder
    with signals_as_interrupt(), scratch_folder():
        if argv is not None:
            return _check(args)
        return run_supervised(lambda note: _check(args), stopped_ending,
                              lambda stopped: salvage(stopped, args.out))


def _check(args: argparse.Namespace) -> int:
    import torch
    if not torch.cuda.is_available():
        print("gpu-check: no CUDA device here; nothing to check (run it on a GPU machine)")
        return 0
    sections = set(args.only.split(","))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []

    def log(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    device = torch.device("cuda:0")
    started = time.time()
    report: dict = {"device": torch.cuda.get_device_name(device), "torch": torch.__version__,
                    "driver": _driver(), "model": args.model}
    log(f"{report['device']} · driver {report['driver']} · torch {torch.__version__}")
    def save() -> None:
        """After every section: a run stopped at a time limit keeps what it measured."""
        report["wall_s"] = time.time() - started
        report["promises"] = promises(report)
        report["unmeasured"] = unmeasured(report)
        report["energy_expectations"] = expectations(report)
        write_atomic(out / "gpu-check.json", [json.dumps(report, indent=1, default=str), "\n"])
        write_atomic(out / "gpu-check.log", ["\n".join(lines), "\n"])

    try:
        _run_sections(args, sections, device, report, log, save)
    except KeyboardInterrupt as exc:    # the sections that finished are kept, marked stopped
        report["stopped"] = stopped_text(signal_of(exc))
        raise
    finally:
        save()
        for name, ok in report["promises"].items():
            log(f"[{'pass' if ok else 'FAIL'}] {name}")
        for name, met in report["energy_expectations"].items():     # reported, never failed
            log(f"[{'met' if met else 'not met'}, expected only] {name}")
        for line in report["unmeasured"]:
            log(f"[not measured] {line}")
        log(f"{report['wall_s']:.0f} s; wrote {out / 'gpu-check.json'} and gpu-check.log")
        save()
    return 0 if all(report["promises"].values()) else 1


def _driver() -> str:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return "unknown"
    done = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"],
                          capture_output=True, text=True, timeout=30)
    return done.stdout.strip() or "unknown"


def _run_sections(args, sections: set[str], device, report: dict, log, save) -> None:
    """The sections asked for, in the budget's order, each within what the budget allows it
    (budget.py); one that cannot fit is skipped and says so."""
    order = [section for section in PLAN if section in sections]
    budget = Budget(args.budget or None, order)
    report["budget"] = {"seconds": budget.total_s, "planned_s": budget.planned}
    for section in order:
        reason = budget.skip_reason(section)
        if reason is not None:
            report.setdefault("skipped", {})[section] = reason
            log(f"{section}: {reason}")
        else:
            RUNNERS[section](args, device, report, log, save, budget.for_section(section))
        save()


def _nvml(args, device, report: dict, log, save, allowed_s: float | None) -> None:
    idle = nvml_against_smi(device)
    report["nvml"] = {"idle": idle, "idle_memory_agrees": memory_agrees(idle)}
    log(f"NVML idle, infertop vs nvidia-smi: {json.dumps(idle)}")


def _host(args, device, report: dict, log, save, allowed_s: float | None) -> None:
    from probe.engine.model.loading import load_model
    from tools.gpu_check.host_cost import host_costs
    log("the batching loop's host work, the model's step replaced by nothing:")
    report["host"] = host_costs(load_model(args.model), device, HOST_SLOTS, log=log)


def _sigterm(args, device, report: dict, log, save, allowed_s: float | None) -> None:
    report["sigterm"] = sigterm_during_compile(args.model, str(device), log=log,
                                               limit_s=allowed_s)


def _decode(args, device, report: dict, log, save, allowed_s: float | None) -> None:
    from tools.gpu_check.kernel_profile import kernel_floor_us
    started = time.monotonic()
    report["kernel_floor_us"] = floor = kernel_floor_us()
    report["roofline"] = roof = roofline(args.model, device)
    log(f"kernel floor {floor:.2f} µs; HBM {roof['bandwidth_gb_s']:.0f} GB/s; roofline "
        + ", ".join(f"{p} {ms:.4f} ms" for p, ms in roof["roofline_ms"].items()))
    timeout, ready = args.config_timeout, args.ready_timeout
    if allowed_s is not None:       # compiles side by side, then timed one at a time
        left = allowed_s - (time.monotonic() - started)
        timeout, ready = min(timeout, left), min(ready, left * READY_SHARE)
    log("decode matrix (ms/token warm, median of the timed requests):")
    report["decode"] = run_matrix(args.model, args.requests, args.output_tokens,
                                  ready_s=ready, timeout_s=timeout, log=log,
                                  modes=tuple(args.modes.split(",")),
                                  paths=tuple(args.paths.split(",")),
                                  budget_ends=timeout < args.config_timeout)
    judge_decode(report["decode"], roof, floor)


def _batching(args, device, report: dict, log, save, allowed_s: float | None) -> None:
    from tools.gpu_check.batching import replay_run
    runs: list[dict] = []
    nvml = report.setdefault("nvml", {})
    started = time.monotonic()

    def under_load() -> None:
        nvml["load"] = load = nvml_against_smi(device)
        nvml["load_memory_agrees"] = memory_agrees(load)
        log(f"NVML under load, infertop vs nvidia-smi: {json.dumps(load)}")

    from probe.engine.model.loading import load_model
    from tools.gpu_check.layouts import layouts_agree
    report["layouts"] = layouts = layouts_agree(load_model(args.model), device)
    log(f"paged against static, {layouts['requests']} azure-conv requests at "
        f"{layouts['slots']} slots: tokens {'equal' if layouts['equal'] else 'DIFFER'}"
        + (f" ({', '.join(layouts['differ'])})" if layouts["differ"] else ""))
    save()
    log("continuous batching, azure-conv at full load:")
    plan = [(int(s), args.batching_opts) for s in args.slots.split(",") if s]
    plan += [(0, args.batching_opts), (0, args.batching_contrast)]
    for index, (slots, opts) in enumerate(plan):
        limit = args.batching_timeout
        if allowed_s is not None:   # the runs left share what is left, each its stop's time
            left = allowed_s - (time.monotonic() - started)
            limit = min(limit, left / (len(plan) - index) - STOP_S)
        if limit < MIN_BATCHING_RUN_S:
            runs.append({"max_batch": slots or "sized", "options": opts.split(","),
                         "unmeasured": f"{limit:.0f} s of the budget were left for it"})
            continue
        requests = max(200, min(3000, slots * 10)) if slots else 3000
        runs.append(replay_run(args.model, device, max_batch=slots, requests=requests,
                               options=opts.split(","), timeout_s=limit, log=log,
                               at_load=under_load if not slots else None))
        report["batching"] = runs
        save()
    report["batching"] = runs


def _dashboard(args, device, report: dict, log, save, allowed_s: float | None) -> None:
    seconds = args.dashboard_seconds
    if allowed_s is not None:
        seconds = min(seconds, allowed_s - DASHBOARD_START_S)
    try:
        walk = subprocess.run([sys.executable, "-m", "tools.gpu_walk", args.model, args.out,
                               str(seconds)], capture_output=True, text=True,
                              timeout=seconds + DASHBOARD_START_S + 60)
    except subprocess.TimeoutExpired:
        report["dashboard"] = {"failed": f"the walk did not end within {seconds:.0f} s and "
                                         f"{DASHBOARD_START_S + 60:.0f} s of start and stop"}
        return
    lines_out = walk.stdout.strip().splitlines()
    for line in lines_out[:-1]:
        log(line)
    try:
        report["dashboard"] = json.loads(lines_out[-1])
    except (IndexError, json.JSONDecodeError):
        report["dashboard"] = {"failed": (walk.stderr or "no output")[-400:]}


RUNNERS = {"nvml": _nvml, "host": _host, "sigterm": _sigterm, "decode": _decode,
           "batching": _batching, "dashboard": _dashboard}


if __name__ == "__main__":
    sys.exit(main())
