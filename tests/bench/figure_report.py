"""A whole bench folder from synthetic runs, for the chart and HTML tests: report.json with
every section (E1–E8, roofline, observer) built by the experiments' own code, and a session
snapshot per run under runs/, as `bench` leaves them. No model, no torch.compile."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

from probe.bench.experiments import acceptance_checks
from probe.bench.experiments.e7_batching import MODES, BatchingResults, BatchingRun
from probe.bench.experiments.e7_batching import build as build_e7
from probe.bench.experiments.e8_kv_layout import LayoutRun
from probe.bench.experiments.e8_kv_layout import build as build_e8
from probe.common.atomic import write_json_atomic
from probe.contract.records import KVPool
from probe.contract.session import ConfigEntry, SessionData
from probe.runs.openloop import open_loop_figures
from probe.session_store.snapshot import snapshot_document
from tests.bench.test_bench_report import _results, _sections
from tests.conftest import synthetic_record

ENVIRONMENT = {"device": "cpu", "device_name": "x86_64", "cpu_count": 2, "torch": "2.14.1",
               "roofline": {
                   "step_bytes": {"decoder_layers": 600_000, "cross_kv_skipped": 50_000,
                                  "lm_head": 200_000, "total": 800_000},
                   "step_bytes_by_precision": {"fp32": 800_000, "bf16": 400_000,
                                               "int8": 230_000},
                   "matmul_chain_ms": {"fp32": 0.05, "bf16": 0.03, "int8": 0.02},
                   "bandwidth": {"read_gb_s": 20.0}, "matmul_gflops": 100.0}}
CAPACITY = {"off": 2.0, "dynamic": 5.0, "continuous": 8.0}     # req/s each mode can serve


def open_loop_records(mode: str, rate: float, n: int = 24) -> list:
    """n requests arriving at `rate`, served at most at the mode's capacity: the queue (and
    the latency) grows once the rate is past it."""
    served = min(rate, CAPACITY[mode])
    return [synthetic_record(f"o{i}", i, latency_ms=80.0 + 400.0 * i * max(rate / served - 1, 0)
                             + 3.0 * i, start_s=i / served, output_tokens=6, kv_bytes=4096)
            for i in range(n)]


def e7_results() -> BatchingResults:
    runs = {}
    for factor in (0.5, 1.0, 2.0, 4.0):
        rate = CAPACITY["off"] * factor
        for mode in MODES:
            runs[f"chat/{factor:g}x/{mode}"] = BatchingRun(
                "chat", factor, mode, open_loop_figures(open_loop_records(mode, rate), rate))
    return BatchingResults({"chat": CAPACITY["off"]}, runs)


def e8_runs() -> dict[str, LayoutRun]:
    rate = 32.0
    pool = KVPool("paged", 16, 382, 190, 16_384)
    return {"static": LayoutRun("static", 8, open_loop_figures(
                open_loop_records("dynamic", rate), rate), 77.7, 6_300_000, None),
            "paged": LayoutRun("paged", 16, open_loop_figures(
                open_loop_records("continuous", rate), rate), 7.7, pool.budget_bytes, pool)}


def write_snapshot(out: Path, name: str, result) -> str:
    """The run's warm passes as a session snapshot, as the bench writes runs/KEY.json."""
    data = SessionData(records=result.steady_records,
                       configs=MappingProxyType({"c1": ConfigEntry("c1", result.options)}))
    document = snapshot_document(data, environment=ENVIRONMENT, model={"name": "t5-tiny"},
                                 trace={"name": "chat"})
    relative = f"runs/{name}.json"
    write_json_atomic(out / relative, document)
    return relative


def synthetic_bench(out: Path, plan, make_result) -> dict:
    """report.json's document (not yet written) for a folder whose runs/ it fills."""
    results = {key: replace(result, snapshot=write_snapshot(out, f"run{index}", result))
               for index, (key, result) in enumerate(_results(plan, make_result).items())}
    sections = _sections(plan, results, ENVIRONMENT)
    e7, e8 = e7_results(), e8_runs()
    sections["E7"], sections["E8"] = build_e7(e7), build_e8(e8, 2.0, 24)
    runs = {key: result.as_dict() for key, result in results.items()}
    runs["E7"] = e7.as_dict()
    return {"schema": "infertop-bench/1", "created": "2026-12-01T22:00:00+00:00",
            "settings": {"model": "t5-tiny", "trace": "chat", "requests": 4, "repeats": 2,
                         "quick": True, "seed": 0, "compile_backend": "inductor"},
            "environment": ENVIRONMENT, "plan": {}, "experiments": sections, "runs": runs,
            "left_out": [], "checks": acceptance_checks(sections), "wall_s": 12.0,
            "files": {}}
