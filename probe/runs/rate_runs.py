"""One open-loop replay of a trace at an offered rate, on a fresh engine of the study's model,
its session kept (and saved, for `snapshot compare`): what capacity at the SLO and `tune` run."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from probe.analysis.slo import goodput
from probe.common.atomic import write_json_atomic
from probe.contract.options import OptConfig
from probe.contract.records import RequestRecord
from probe.contract.session import SessionData
from probe.runs.capacity import RateRun
from probe.runs.openloop import MAX_BATCH
from probe.runs.runs import RunContext, make_engine
from workloads.replayer import OpenLoopReplayer

WARM_REQUESTS = 2


def replay_at(context: RunContext, options: OptConfig, workload, *, rate: float, requests: int,
              trace_name: str, save_to: Path | None = None,
              stop: threading.Event | None = None, warm: int = WARM_REQUESTS,
              max_batch: int = MAX_BATCH, batch_window_ms: float | None = None) -> SessionData:
    """Serve the workload's first `requests` arriving at `rate` req/s: the gaps between those
    requests, scaled so that their own mean rate is `rate` (the replayer's rate is the mean
    over the trace it is given, so it gets only these). The session it leaves, written to
    `save_to` when given.

    Measured warm: before the first arrival the engine compiles every bucket shape (a compiled
    config) and rehearses `warm` of the trace's requests without recording them — their
    compiles stay in the session as events, no request waits on them. So a run measures the
    config in steady state, not its cold start (the bench's E1 measures that). `max_batch`
    and `batch_window_ms` (None: the engine's) are what `tune --search` varies."""
    from probe.engine.process.headless import document_for, run_replay
    from probe.engine.serving import ServingLoop
    window = {} if batch_window_ms is None else {"batch_window_ms": batch_window_ms}
    engine = make_engine(context, options, bucket_edges=workload.bucket_edges,
                         max_new_tokens=workload.max_new_tokens, max_batch=max_batch, **window)
    try:
        _warm_up(engine, workload, warm)
        replayed = replace(workload.trace, requests=workload.trace.requests[:requests])
        run_replay(ServingLoop(engine, OpenLoopReplayer(replayed, rate=rate)), stop)
        if save_to is not None:
            write_json_atomic(save_to, document_for(engine, workload, trace_name))
        return engine.session.freeze()
    finally:
        engine.close()


def _warm_up(engine, workload, count: int) -> None:
    from probe.engine.model.requests import EngineRequest
    engine.prewarm()
    for i, request in enumerate(workload.trace.requests[:count]):
        engine.rehearse([EngineRequest(id=f"warm-{i}", seq=-100 - i,
                                       input_length=request.input_length,
                                       output_length=request.output_length,
                                       arrival_s=engine.clock.now_s(), text=request.text)])


def rate_run(data: SessionData, rate: float, session: Path | None = None) -> RateRun:
    """The run's attainment and goodput over every record it made (its one config)."""
    figures = goodput(data.records, data.slo)
    return RateRun(rate, figures.slo_attainment, figures.goodput_rps,
                   None if session is None else str(session), ran_alone(data.records))


def ran_alone(records: Sequence[RequestRecord]) -> bool:
    """Whether every request arrived after the one before it had finished (in arrival order):
    nothing queued behind or shared the engine with another, as at zero load."""
    ordered = sorted(records, key=lambda r: r.arrival_s)
    return bool(ordered) and all(after.arrival_s >= before.end_s
                                 for before, after in zip(ordered, ordered[1:]))
