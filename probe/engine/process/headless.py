"""A replay without the dashboard: serve a workload, return the engine with its session."""

from __future__ import annotations

import threading
from dataclasses import asdict
from typing import Callable

from probe.contract.options import OptConfig
from probe.contract.records import RequestRecord
from probe.engine.engine import Engine
from probe.engine.process.environment import environment
from probe.engine.serving import ServingLoop
from probe.engine.workload_setup import PreparedWorkload
from probe.session_store.snapshot import snapshot_document
from workloads.replayer import ClosedLoopReplayer, OpenLoopReplayer


def replay_loop(engine: Engine, workload: PreparedWorkload, *, speed: float = 1.0,
                rate: float | None = None, max_requests: int | None = None,
                concurrency: int | None = None,
                on_records: Callable[[list[RequestRecord]], None] | None = None) -> ServingLoop:
    """Every replay's loop: open at the trace's times (× speed, or at `rate`), or closed."""
    replayer: ClosedLoopReplayer | OpenLoopReplayer
    if concurrency:
        replayer = ClosedLoopReplayer(workload.trace, concurrency=concurrency,
                                      max_requests=max_requests)
    else:
        replayer = OpenLoopReplayer(workload.trace, speed=speed, rate=rate,
                                    max_requests=max_requests)
    return ServingLoop(engine, replayer, on_records=on_records)


def run_replay(loop: ServingLoop, stop: threading.Event | None = None) -> ServingLoop:
    """Serve until the replay is over (or `stop`), then compute the drift references the idle
    moments did not reach."""
    engine = loop.engine
    stop = stop or threading.Event()
    loop.run(stop)
    if not stop.is_set():
        engine.compute_references()
    return loop


def engine_for(workload: PreparedWorkload, *, model: str, device: str, options: OptConfig,
               max_input: int = 512, compile_backend: str = "inductor",
               keep_tokens: bool = False, threads: int | None = None, max_batch: int = 0,
               kv_budget_bytes: int | None = None, drift_every: int = 8,
               batch_window_ms: float | None = None) -> Engine:
    window = {} if batch_window_ms is None else {"batch_window_ms": batch_window_ms}
    settings = workload.engine_settings(model=model, device=device, max_input=max_input,
                                        compile_backend=compile_backend,
                                        keep_tokens=keep_tokens, threads=threads,
                                        max_batch=max_batch, kv_budget_bytes=kv_budget_bytes,
                                        drift_every=drift_every, **window)
    return Engine(settings, options)


def document_for(engine: Engine, workload: PreparedWorkload, trace_name: str,
                 replay: dict | None = None, asked: int | None = None) -> dict:
    """The session JSON of a running engine. Besides the raw records it keeps what the
    dashboard's panels show that records cannot give back (the device at save time, the
    roofline, the batching slots; `replay`: its speed and queue at save time), so `--load`
    redraws every panel as it was. `asked`: how many of the trace's requests the run was
    asked to serve (`replay --requests`), kept as trace.asked: a stopped run's count of
    served against asked (the doctor's)."""
    roofline = engine.roofline_status()
    settings = engine.settings
    return snapshot_document(
        engine.session.freeze(), environment=environment(engine.device),
        model=engine.loaded.info.as_dict(engine.options.precision),
        trace={"name": trace_name, "requests": len(workload.trace.requests),
               "fit": workload.fit.summary(), **({} if asked is None else {"asked": asked})},
        settings={"bucket_edges": list(workload.bucket_edges),
                  "bucket_source": workload.bucket_source,
                  "max_new_tokens": workload.max_new_tokens,
                  "compile_backend": settings.compile_backend,
                  "max_batch": settings.max_batch, "batch_window_ms": settings.batch_window_ms,
                  "kv_block_tokens": settings.kv_block_tokens,
                  "kv_budget_bytes": settings.kv_budget_bytes},
        live={"config_id": engine.config_id,       # the current config, for every view
              "device_sample": asdict(engine.device_probe.sample()),
              "roofline": None if roofline is None else asdict(roofline),
              **({"replay": replay} if replay else {})})
