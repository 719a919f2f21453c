"""Synthetic sessions and run results for the bench tests: no model, no torch.compile."""

from __future__ import annotations

from types import MappingProxyType
from typing import Callable, Sequence

import pytest

from probe.contract.options import OptConfig
from probe.contract.records import CompileEvent, GraphBreakRecord, RequestRecord
from probe.contract.session import ConfigEntry, SessionData
from probe.runs.plan import BenchRequest, RunSpec
from probe.runs.results import PassResult, RunResult, summarize_run
from tests.conftest import synthetic_record

# the shared builder of records with consistent marks (tests/conftest.py)
record = synthetic_record


def phase_fields(phases: tuple[float, float, float] | None) -> dict:
    """A compile event's (tracing, aot, inductor) seconds, or none (a session saved before)."""
    return {} if phases is None else dict(zip(("tracing_s", "aot_s", "inductor_s"), phases))


@pytest.fixture
def make_record() -> Callable[..., RequestRecord]:
    return record


@pytest.fixture
def make_session() -> Callable[..., SessionData]:
    def make(records: Sequence[RequestRecord], *, options: dict[str, OptConfig] | None = None,
             events: Sequence[CompileEvent] = (),
             breaks: Sequence[GraphBreakRecord] = ()) -> SessionData:
        options = options or {"c1": OptConfig()}
        configs = {cid: ConfigEntry(cid, opt) for cid, opt in options.items()}
        return SessionData(tuple(records), tuple(events), tuple(breaks),
                           MappingProxyType(configs), ())
    return make


@pytest.fixture
def make_result(make_session) -> Callable[..., RunResult]:
    """A run result as runs.summarize_run builds it, from chosen per-pass latencies."""
    def make(options: OptConfig = OptConfig(), *, pass_latencies: Sequence[Sequence[float]],
             cold_ms: float = 1000.0, inputs: Sequence[int] | None = None,
             padded: Sequence[int] | None = None, compiles: Sequence[tuple[str, str, str]] = (),
             breaks: Sequence[tuple[str, str, int]] = (), kv_bytes: int = 0,
             output_tokens: int = 5, edges: tuple[int, ...] = (), edges_name: str = "none",
             requests_name: str = "replayed",
             phases: tuple[float, float, float] | None = None) -> RunResult:
        count = len(pass_latencies[0])
        inputs = list(inputs or [10 + i for i in range(count)])
        padded = list(padded or inputs)
        spec = RunSpec(options, tuple(BenchRequest(f"r{i}", inputs[i], output_tokens)
                                      for i in range(count)), requests_name, edges, edges_name)
        warm = [record(f"r{i}@warm-up", i, latency_ms=cold_ms if i == 0 else 50.0,
                       input_tokens=inputs[i], padded_tokens=padded[i], kv_bytes=kv_bytes,
                       output_tokens=output_tokens, stall_ms=cold_ms / 2 if i == 0 else 0.0)
                for i in range(count)]
        passes = []
        for p, latencies in enumerate(pass_latencies):
            recs = [record(f"r{i}@pass {p + 1}", (p + 1) * count + i, latency_ms=v,
                           input_tokens=inputs[i], padded_tokens=padded[i], kv_bytes=kv_bytes,
                           output_tokens=output_tokens, start_s=100.0 * (p + 1) + i)
                    for i, v in enumerate(latencies)]
            passes.append(PassResult(tuple(recs), wall_s=sum(latencies) / 1000))
        events = []
        for n, (function, kind, request) in enumerate(compiles):
            events.append(CompileEvent(compile_id=f"{n}/0", kind=kind, function=function,
                                       start_s=0.0, duration_s=1.5, reason="size mismatch"
                                       if kind == "recompile" else None,
                                       request_id=request, config_id="c1", graphs=1,
                                       **phase_fields(phases)))
        break_records = [GraphBreakRecord("c1", reason, location, count)
                         for reason, location, count in breaks]
        data = make_session(warm + [r for p in passes for r in p.records],
                            options={"c1": options}, events=events, breaks=break_records)
        return summarize_run(spec, data, PassResult(tuple(warm), 1.0), passes)
    return make
