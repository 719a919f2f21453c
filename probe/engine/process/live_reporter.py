"""Builds the LiveView of a running serving loop (engine + replayer)."""

from __future__ import annotations

from probe.analysis.live_figures import WINDOW_SIZE, build_live, capacity_rps, overloaded
from probe.contract.live import LiveView, ReplayStatus
from probe.engine.serving import ServingLoop


class LiveReporter:
    def __init__(self, loop: ServingLoop, trace_name: str) -> None:
        self.loop = loop
        self.trace_name = trace_name
        self.window_start_seq = 0
        self.saved: str | None = None       # the snapshot `s` wrote last (the checklist's)

    def reset_window(self) -> None:
        # the replay's next position: a thinned replay's seqs skip the arrivals not kept, so
        # the count dispatched would reach back before the reset
        self.window_start_seq = getattr(self.loop.replayer, "dispatched", self.loop.dispatched)

    def build(self) -> LiveView:
        engine, loop = self.loop.engine, self.loop
        # Compiles that ended reach the feed now, not when the request that waited ends.
        engine.flush_probes()
        compiling = engine.probe.compiling()
        data = engine.session.freeze()
        window = [r for r in data.records[-WINDOW_SIZE:] if r.seq >= self.window_start_seq]
        capacity = capacity_rps(window)
        offered = loop.offered_rps()
        replayer = loop.replayer
        replay = ReplayStatus(
            trace=self.trace_name, running=not loop.replay_done.is_set() and not replayer.paused,
            paused=replayer.paused, speed=getattr(replayer, "speed", 1.0),
            dispatched=loop.dispatched, completed=loop.completed, failed=loop.failed,
            total=replayer.total, queue_depth=loop.queue_depth, offered_rps=offered,
            capacity_rps=capacity,
            overloaded=overloaded(offered, capacity, loop.queue_depth))
        return build_live(
            data, t_s=engine.clock.now_s(), model=engine.loaded.info.name,
            device=str(engine.device), options=engine.options, config_id=engine.config_id,
            window_start_seq=self.window_start_seq,
            compiling_since_s=compiling.since_s if compiling else None,
            compiling_request=compiling.request_id if compiling else None,
            device_sample=engine.device_probe.sample(), replay=replay,
            bucket_edges=engine.settings.bucket_edges, max_batch=engine.settings.max_batch,
            compiling=compiling, roofline=engine.roofline_status(),
            requested_options=loop.last_requested, options_pending=loop.options_pending,
            saved=self.saved)
