"""`--metrics-port N`: the engine's figures as Prometheus metrics, through prometheus_client.

A poller reads the session's append-only records every second and turns what is new into
observations, so the exporter needs no hook inside the engine and shows exactly what the
session JSON will hold. Names and units follow Prometheus's conventions (seconds, bytes,
`_total` counters); `config` is the session's config id, and `infertop_config_info` maps each
id to its options. Energy (docs/energy.md) is two counters per config, the requests' joules
and the idle floor, exported only where the session holds a counter's readings; with the
output-token counter they give J/token over any window (grafana-dashboard.json).
"""

from __future__ import annotations

import threading
from typing import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from probe.analysis.slo import goodput
from probe.analysis.stats import COMPILING, event_phases
from probe.contract.session import Session

LATENCY_BUCKETS_S = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
TPOT_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1)
POLL_S = 1.0


class PrometheusExporter:
    def __init__(self, session: Session, queue_depth: Callable[[], int], *, port: int | None,
                 host: str = "127.0.0.1") -> None:
        """`port` None: no server of its own (`infertop serve` answers /metrics itself)."""
        self._session, self._queue_depth = session, queue_depth
        self.registry = CollectorRegistry()
        r = self.registry
        self.latency = Histogram("infertop_request_latency_seconds",
                                 "Arrival to end of a served request", ["config"],
                                 buckets=LATENCY_BUCKETS_S, registry=r)
        self.ttft = Histogram("infertop_ttft_seconds", "Arrival to first generated token",
                              ["config"], buckets=LATENCY_BUCKETS_S, registry=r)
        self.tpot = Histogram("infertop_tpot_seconds",
                              "Time per output token after the first (the request's own)",
                              ["config"], buckets=TPOT_BUCKETS_S, registry=r)
        self.requests = Counter("infertop_requests", "Requests finished",
                                ["config", "status"], registry=r)
        self.output_tokens = Counter(
            "infertop_output_tokens", "Output tokens of the config's served requests (a failed "
            "request's not): what J/token and tokens/s divide by", ["config"], registry=r)
        self.compiles = Counter("infertop_compiles", "torch.compile events",
                                ["kind"], registry=r)
        self.compile_seconds = Counter(
            "infertop_compile_seconds", "Seconds inside compiles and recompiles, split as "
            "dynamo timed each (tracing, aot, inductor, cache load)", ["config", "phase"],
            registry=r)
        self.graph_breaks = Counter("infertop_graph_breaks",
                                    "Graph breaks dynamo logged", registry=r)
        self.kv_cache = Gauge("infertop_kv_cache_bytes",
                              "KV-cache bytes held by the latest request", registry=r)
        self.queue = Gauge("infertop_queue_depth", "Requests waiting to be served", registry=r)
        self.config_info = Gauge("infertop_config_info", "Options of each config id",
                                 ["config", "options"], registry=r)
        self.goodput_rps = Gauge(
            "infertop_goodput_requests_per_second", "Requests served within every bound of "
            "the session's SLO, per second of the config's serving span", ["config"], registry=r)
        self.goodput_tokens = Gauge(
            "infertop_goodput_tokens_per_second", "Output tokens of the requests within the "
            "SLO, per second of the same span", ["config"], registry=r)
        self.slo_attainment = Gauge(
            "infertop_slo_attainment", "Requests within the SLO / all requests of the config "
            "(failed ones count as not within it), 0..1", ["config"], registry=r)
        self.energy = Counter(
            "infertop_energy_joules", "Joules the device's energy counter charged to the "
            "config's requests (encode and decode steps; failed requests' included)",
            ["config"], registry=r)
        self.idle_energy = Counter(
            "infertop_idle_energy_joules", "The config's idle floor: joules between the "
            "engine's steps, charged to no request", ["config"], registry=r)
        self._seen_records = self._seen_breaks = 0
        self._seen_events: set[tuple] = set()    # events are kept in start order, so a late
                                                 # one can land before others: seen by identity
        self._seen_configs: set[str] = set()
        self._seen_idle_j: dict[str, float] = {}
        self._lock = threading.Lock()
        self._server = None if port is None else start_http_server(port, addr=host,
                                                                     registry=r)[0]
        self.port = None if self._server is None else self._server.server_port
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="prometheus", daemon=True)
        self._thread.start()

    def refresh(self) -> None:
        """Observe what the session gained since the last call."""
        with self._lock:
            data = self._session.freeze()
            for config_id, entry in data.configs.items():
                if config_id not in self._seen_configs:
                    self._seen_configs.add(config_id)
                    self.config_info.labels(config_id, entry.options.label()).set(1)
            for record in data.records[self._seen_records:]:
                self.requests.labels(record.config_id, "ok" if record.ok else "failed").inc()
                if record.ok:
                    self.output_tokens.labels(record.config_id).inc(record.output_tokens)
                    self.latency.labels(record.config_id).observe(record.latency_ms / 1e3)
                    if record.ttft_ms is not None:
                        self.ttft.labels(record.config_id).observe(record.ttft_ms / 1e3)
                    if record.tpot_ms is not None:
                        self.tpot.labels(record.config_id).observe(record.tpot_ms / 1e3)
                if record.energy_j is not None:    # None: no counter, nothing exported
                    self.energy.labels(record.config_id).inc(record.energy_j)
            if data.records[self._seen_records:]:
                self.kv_cache.set(data.records[-1].kv_cache_bytes)
            if data.slo is not None and data.records[self._seen_records:]:
                self._observe_goodput(data)
            self._seen_records = len(data.records)
            self._observe_idle(data)
            for event in data.events:
                identity = (event.config_id, event.compile_id, event.kind, event.start_s)
                if identity not in self._seen_events:
                    self._seen_events.add(identity)
                    self.compiles.labels(event.kind).inc()
                    phases = event_phases(event) if event.kind in COMPILING else None
                    for phase, seconds in (phases.parts() if phases else {}).items():
                        self.compile_seconds.labels(event.config_id, phase).inc(seconds)
            breaks = sum(b.count for b in data.breaks)
            if breaks > self._seen_breaks:
                self.graph_breaks.inc(breaks - self._seen_breaks)
            self._seen_breaks = max(self._seen_breaks, breaks)
            self.queue.set(self._queue_depth())

    def _observe_goodput(self, data) -> None:
        """Each config's goodput over all its records so far (the segment's own figure)."""
        by_config: dict[str, list] = {}
        for record in data.records:
            by_config.setdefault(record.config_id, []).append(record)
        for config_id, records in by_config.items():
            figures = goodput(records, data.slo)
            for gauge, value in ((self.goodput_rps, figures.goodput_rps),
                                 (self.goodput_tokens, figures.goodput_tokens_per_s),
                                 (self.slo_attainment, figures.slo_attainment)):
                if value is not None:
                    gauge.labels(config_id).set(value)

    def _observe_idle(self, data) -> None:
        """The ledger's idle joules are a running total per config: add what it gained."""
        for config_id, energy in data.energy.items():
            if energy.unavailable is not None or energy.source is None:
                continue
            gained = energy.idle_j - self._seen_idle_j.get(config_id, 0.0)
            if gained > 0:
                self.idle_energy.labels(config_id).inc(gained)
                self._seen_idle_j[config_id] = energy.idle_j

    def _poll(self) -> None:
        while not self._stop.wait(POLL_S):
            self.refresh()

    def close(self) -> None:
        self._stop.set()
        self.refresh()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def exposition(self) -> bytes:
        """The metrics in Prometheus's text format, fresh."""
        from prometheus_client import generate_latest
        self.refresh()
        return generate_latest(self.registry)
