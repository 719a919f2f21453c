"""The engine: serves requests under the current OptConfig and records what each one cost.

Synchronous and UI-free. The serving loop (probe/engine/serving.py) feeds it from a replayer; the
engine process (probe/engine/process/engine_process.py) runs it away from the dashboard.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import replace
from typing import Callable, Sequence, TypedDict, TypeVar

import torch
import torch._dynamo

from probe.analysis.compile_ledger import LedgerBook, with_pay_back
from probe.analysis.cpu_levers import cpu_flags, lever_note
from probe.common.clock import SessionClock
from probe.contract.options import OptConfig
from probe.contract.records import EnergyPhases, Notice, RequestRecord, RooflineStatus
from probe.contract.session import Session
from probe.contract.settings import EngineSettings
from probe.engine.call_errors import is_compile_failure, short_error
from probe.engine.decode.kv_cache import position_bytes
from probe.engine.decode.result import DecodeResult
from probe.engine.decode.slot_graphs import ladder, rows_for
from probe.engine.decode.slot_sizing import SlotSizing, size_slots
from probe.engine.measure.bandwidth_cache import MachineBandwidth
from probe.engine.model.loading import DecoderDims, LoadedModel, load_model
from probe.engine.model.requests import EngineRequest, input_ids, pad_batch
from probe.engine.observe.compile_probe import CompileProbe
from probe.engine.observe.device_probe import DeviceProbe, resolve_device
from probe.engine.observe.energy_counter import EnergyReading, reset_active, set_active
from probe.engine.observe.energy_ledger import EnergyLedger
from probe.engine.observe.graph_timer import GraphTimer
from probe.engine.session_swap import follow_session
from probe.engine.switchboard import DTYPES, Switchboard, apply_tf32
from workloads.buckets import bucket_for

log = logging.getLogger(__name__)
T = TypeVar("T")
# What drift is measured against: the model as trained, nothing that changes its arithmetic.
REFERENCE_OPTIONS = OptConfig(decode="fullgraph")


class _RecordStart(TypedDict):
    """The fields every record of a request has, whether it was served or failed."""
    id: str
    seq: int
    config_id: str
    input_tokens: int
    padded_tokens: int
    arrival_s: float
    start_s: float
    queue_ms: float
    compile_stall_ms: float
    batch_size: float
    kv_wait_ms: float
    energy_j: float | None
    energy_phases_j: EnergyPhases | None


class Engine:
    def __init__(self, settings: EngineSettings, options: OptConfig | None = None, *,
                 clock: SessionClock | None = None, loaded: LoadedModel | None = None,
                 beside: bool = False) -> None:
        """`beside`: built in a process where another engine serves (a server's warm switch):
        dynamo is not reset (that would drop the serving engine's compiled code, and its next
        request would wait on compiling it again), and only this thread's compiles are its."""
        self.settings = settings
        self.clock = clock or SessionClock()
        if settings.threads:
            torch.set_num_threads(settings.threads)
        self.device = resolve_device(settings.device)
        self.loaded = loaded or load_model(settings.model)
        # through nn.Module's `to` (the same call): transformers wraps PreTrainedModel.to in
        # functools.wraps, which mypy does not bind to an instance (python/mypy#17166)
        module: torch.nn.Module = self.loaded.model
        module.to(self.device)
        self.dims = DecoderDims.of(self.loaded.model)
        self.slot_sizing = self._size_slots(settings)
        self.settings = settings = replace(settings, max_batch=self.slot_sizing.slots)
        self.session = self.ledger_session = Session()    # the ledgers' config ids: session_swap
        self.probe = CompileProbe(self.clock)
        self.probe.install()
        if beside:
            self.probe.watch_only(threading.get_ident())
        else:
            self.probe.reset_dynamo()
        self.device_probe = DeviceProbe(self.device)
        self.energy = EnergyLedger(self.device_probe.energy_counter())
        # the compile ledger: every timed call of the switchboard's callables, per config
        self.ledger = LedgerBook()
        self.graph_timer = GraphTimer(self.ledger, self.clock, self.probe, self.device)
        self.switchboard = Switchboard(self.loaded.model, self.device,
                                       max_new_tokens=settings.max_new_tokens,
                                       compile_backend=settings.compile_backend,
                                       compile_events=self.probe,
                                       graph_timer=self.graph_timer)
        self._awaiting_reference: dict[str, EngineRequest] = {}
        self.bandwidth: MachineBandwidth | None = None     # set by whoever measured it
        self.started_unix = time.time()     # a bandwidth measured before: another run's
        self._cpu_flags = cpu_flags() if self.device.type == "cpu" else frozenset()
        self._step_bytes: dict[tuple[str, str], int] = {}
        self.options = OptConfig()
        self.config_id = ""
        self.set_options(options or OptConfig())

    def _size_slots(self, settings: EngineSettings) -> SlotSizing:
        """Batching's slots, sized once for fp32 (the widest element a config can switch to)."""
        free = torch.cuda.mem_get_info(self.device)[0] if self.device.type == "cuda" else None
        return size_slots(device_type=self.device.type, free_bytes=free,
                          position_bytes=position_bytes(self.dims, 4),
                          max_input_tokens=settings.max_input_tokens,
                          max_new_tokens=settings.max_new_tokens, max_batch=settings.max_batch,
                          kv_budget_bytes=settings.kv_budget_bytes)

    # -- configuration ---------------------------------------------------------------------
    def set_options(self, requested: OptConfig) -> str:
        """Applies from the next request. Each new config starts cold, as a fresh deployment
        of it would: compiled code of the previous config is dropped (torch._dynamo.reset)."""
        variant = self.switchboard.resolve(requested)
        changed = variant.options != self.options or not self.config_id
        known = () if changed else self.session.config_notes(self.config_id)
        config_id = self.session.config_id(variant.options, variant.notes)
        follow_session(self)
        if changed and self.config_id:
            self.probe.reset_dynamo()
        for note in variant.notes:
            if note not in known:       # a refusal that changes nothing is still said, once
                self.notify("warning", note)
        self.options, self.config_id = variant.options, config_id
        apply_tf32(self.options)
        self.session.set_energy(config_id, self.energy.config_energy(config_id))
        return config_id

    def notify(self, level: str, text: str) -> None:
        self.session.add_notice(Notice(self.clock.now_s(), level, text))

    @property
    def bucket_edges(self) -> tuple[int, ...]:
        return self.settings.bucket_edges if self.options.bucketing == "on" else ()

    def close(self) -> None:
        self.probe.uninstall()

    # -- serving -----------------------------------------------------------------------------
    def prewarm(self, output_length: int = 2) -> int:
        """Compile every bucket shape before serving, so no request waits on a compile.
        Returns the number of shapes warmed."""
        if not self.options.compiled:
            return 0
        shapes = self.bucket_edges
        if not shapes:
            self.notify("info", "prewarm without bucketing warms one shape; other lengths "
                                "still compile when they first arrive")
            shapes = (min(64, self.settings.max_input_tokens),)
        for i, width in enumerate(shapes):
            warm = EngineRequest(id=f"prewarm-{width}", seq=-(i + 1), input_length=width,
                                 output_length=output_length, arrival_s=self.clock.now_s())
            self.rehearse([warm])
        return len(shapes)

    def rehearse(self, requests: list[EngineRequest]) -> None:
        """Serve without recording (prewarm, calibration): compiles still happen and are
        recorded as events, with no request waiting on them."""
        self._run(requests, record=False)

    def serve(self, requests: list[EngineRequest]) -> list[RequestRecord]:
        """Serve one batch (usually of one). Never raises for a fault inside a request: the
        records carry the error and the engine goes on."""
        return self._run(requests, record=True)

    def step_bytes(self, options: OptConfig) -> int:
        """Bytes of weights one cached decode step of `options`' model variant reads."""
        key = (options.precision, options.quant)
        if key not in self._step_bytes:
            from probe.engine.measure.step_roofline import decode_step_bytes
            self._step_bytes[key] = decode_step_bytes(self.switchboard.model_for(options)).total
        return self._step_bytes[key]

    def fp32_step_bytes(self) -> int:
        """The working set the roofline's bandwidth is measured on: the fp32 step's weights
        (half precision and int8 read less, from the same memory level or a faster one)."""
        return self.step_bytes(self.options.with_option("precision", "fp32")
                               .with_option("quant", "off"))

    def roofline_status(self) -> RooflineStatus | None:
        """The memory roofline of the config being served, once the bandwidth is known."""
        if self.bandwidth is None:
            return None
        nbytes, bandwidth = self.step_bytes(self.options), self.bandwidth.read_gb_s
        per_position = position_bytes(self.dims, DTYPES[self.options.precision].itemsize)
        return RooflineStatus(precision=self.options.precision
                              + ("" if self.options.quant == "off" else f"+{self.options.quant}"),
                              step_bytes=nbytes, bandwidth_gb_s=bandwidth,
                              measured_unix=self.bandwidth.measured_unix,
                              roofline_ms=nbytes / (bandwidth * 1e9) * 1e3,
                              kv_bytes_per_position=per_position,
                              from_earlier_run=self.bandwidth.measured_unix < self.started_unix,
                              lever_note=lever_note(self.options.precision, self.options.quant,
                                                    self._cpu_flags))

    def drift_sampled(self, request: EngineRequest) -> bool:
        every = self.settings.drift_every
        return bool(every) and request.seq >= 0 and request.seq % every == 0

    @property
    def references_pending(self) -> int:
        return len(self._awaiting_reference)

    def compute_references(self, limit: int | None = None) -> int:
        """Decode drift-sampled requests again with REFERENCE_OPTIONS (fp32, eager, batch 1)
        and keep the tokens: the serving loop calls this when idle, a headless replay at its
        end. Returns how many were computed."""
        done = 0
        while self._awaiting_reference and (limit is None or done < limit):
            request_id = next(iter(self._awaiting_reference))
            request = self._awaiting_reference.pop(request_id)
            row = self.row_for(request)
            ids, mask = pad_batch([row], len(row), self.dims.pad_token_id, self.device)
            self.probe.set_context(None, None)
            self.graph_timer.set_context(None)
            apply_tf32(REFERENCE_OPTIONS)       # the reference's products are true fp32
            try:
                with torch.inference_mode():
                    result = self.switchboard.decoder(REFERENCE_OPTIONS)(
                        ids, mask, request.output_length)
            except Exception as exc:  # no reference: that request leaves the drift sample
                log.warning("reference for %s failed: %s", request_id, short_error(exc))
                continue
            finally:
                apply_tf32(self.options)
            self.session.add_reference(request_id, tuple(result.tokens[0].tolist()))
            done += 1
        return done

    def rows_for(self, requests: list[EngineRequest]) -> tuple[list[list[int]], int]:
        """Each request's input ids, and the width they are padded to (the bucket edge when
        bucketing is on, else the longest)."""
        rows = [self.row_for(r) for r in requests]
        return rows, self.padded_width(rows)

    def row_for(self, request: EngineRequest) -> list[int]:
        return input_ids(request, self.loaded.tokenizer, self.loaded.model.config.vocab_size,
                         self.settings.max_input_tokens)

    def padded_width(self, rows: list[list[int]]) -> int:
        """The width a batch of rows is padded to: the bucket edge when bucketing is on."""
        return bucket_for(max(len(row) for row in rows), self.bucket_edges)

    def flush_probes(self) -> None:
        events = self.probe.collect()
        self.session.add_events(events)
        self.session.set_breaks(self.probe.graph_breaks())
        self.graph_timer.settle()
        self.ledger.attribute(events)
        self.session.set_compile_ledger(with_pay_back(self.ledger.entries(),
                                                      self.session.configs()))

    def commit(self, records: list[RequestRecord]) -> None:
        for record in records:
            self.session.add_record(record)

    def _run(self, requests: list[EngineRequest], *, record: bool) -> list[RequestRecord]:
        options, config_id = self.options, self.config_id
        start_s = self.clock.now_s()
        label = requests[0].id if len(requests) == 1 else f"batch:{requests[0].id}+{len(requests) - 1}"
        self.probe.set_context(label if record else None, config_id)
        self.graph_timer.set_context(config_id, tuple(r.id for r in requests), serving=record)
        stall_before = self.probe.compile_seconds
        rows, width = self.rows_for(requests)
        new_tokens = max(r.output_length for r in requests)
        stops = frozenset(r.output_length for r in requests) if len(requests) > 1 else frozenset()
        error = None
        result = None
        energy_start = self.energy.begin(config_id)
        active = set_active(self.energy.mid if self.energy.available else None)
        try:
            ids, mask = pad_batch(self.ladder_rows(rows, options), width,
                                  self.dims.pad_token_id, self.device)
            result = self.with_compile_fallback(
                options, lambda: self.switchboard.decoder(options)(ids, mask, new_tokens, stops))
        except Exception as exc:  # one request's fault never takes the engine down
            error = short_error(exc)
            log.warning("request %s failed: %s", label, error)
            if isinstance(exc, torch.OutOfMemoryError):
                torch.cuda.empty_cache()
        finally:
            reset_active(active)
            self.probe.set_context(None, config_id)
            self.flush_probes()
        self._charge_call(config_id, energy_start, requests, width, result, record=record)
        self.session.set_energy(config_id, self.energy.config_energy(config_id))
        if not record:
            return []
        stall_ms = (self.probe.compile_seconds - stall_before) * 1000.0
        records = [self.make_record(
            r, row=row, width=width, start_s=start_s, config_id=config_id, batch=len(requests),
            result=result, error=error, stall_ms=stall_ms,
            tokens=None if result is None else result.tokens[i, :r.output_length],
            energy=self.energy.take(r.id))
            for i, (r, row) in enumerate(zip(requests, rows))]
        self.commit(records)
        return records

    def _charge_call(self, config_id: str, start: EnergyReading | None,
                     requests: list[EngineRequest], width: int, result: DecodeResult | None,
                     *, record: bool) -> None:
        """One decode call's joules: the encode step (to the encoder's reading, taken by the
        decode path) split by padded positions, the decode steps by each row's tokens. A call
        that failed, or a path without the encoder's reading, is charged whole to encode: its
        tokens were not made. A rehearsal's joules are nobody's (idle)."""
        encode_work = [(r.id, width) for r in requests] if record else []
        decode_work = [(r.id, r.output_length) for r in requests] if record else []
        middle = None if result is None else result.encoder_done_j
        if middle is None:
            self.energy.end(config_id, start, "encode", encode_work)
            return
        self.energy.charge(config_id, start, middle, "encode", encode_work)
        self.energy.end(config_id, middle, "decode", decode_work)

    def ladder_rows(self, rows: list[list[int]], options: OptConfig) -> list[list[int]]:
        """A dynamic batch under CUDA graphs is padded with copies of its first row up to the
        ladder's next size (1, 2, 4, … max_batch), so each size compiles and records its graph
        once instead of once for every batch size that occurs. Their tokens are dropped."""
        if len(rows) < 2 or not self.switchboard.pads_batches(options):
            return rows
        size = rows_for(len(rows) - 1, ladder(max(self.settings.max_batch, len(rows))))
        return rows + [rows[0]] * (size - len(rows))

    def with_compile_fallback(self, options: OptConfig, call: Callable[[], T]) -> T:
        """Run `call` under inference mode; if torch.compile itself fails, record the fallback,
        serve this config eager from now on, and run `call` again (it must look up its
        callable through the switchboard each time)."""
        try:
            with torch.inference_mode():
                return call()
        except Exception as exc:
            if not (self.switchboard.is_compiled(options) and is_compile_failure(exc)):
                raise
            reason = short_error(exc)
            self.probe.record_fallback(options.decode, f"compile failed, serving eager: {reason}")
            self.notify("error", f"compile failed for {options.label()}; this config now runs "
                                 f"eager ({reason})")
            self.switchboard.fall_back_to_eager(options)
            with torch.inference_mode():
                return call()

    def make_record(self, request: EngineRequest, *, row: list[int], width: int, start_s: float,
                    config_id: str, batch: float, result: DecodeResult | None = None,
                    error: str | None = None, stall_ms: float = 0.0,
                    tokens: Sequence[int] | torch.Tensor | None = None, held_by_rows: int | None = None,
                    kv_wait_ms: float = 0.0, energy: EnergyPhases | None = None) -> RequestRecord:
        """`result` holds this request's marks; its KV bytes are shared by the result's rows
        (or `held_by_rows`). Its tokens are kept only when the settings ask for them."""
        to_s = self.clock.to_session_s
        sampled = self.drift_sampled(request)
        # converted only when kept: most requests keep none (a tensor row or a list comes in)
        kept = (tuple(int(t) for t in tokens)
                if tokens is not None and (self.settings.keep_tokens or sampled) else None)
        if kept is not None and sampled:
            self._awaiting_reference[request.id] = request
        common = _RecordStart(id=request.id, seq=request.seq, config_id=config_id,
                              input_tokens=len(row), padded_tokens=width,
                              arrival_s=request.arrival_s, start_s=start_s,
                              queue_ms=(start_s - request.arrival_s) * 1e3,
                              compile_stall_ms=stall_ms, batch_size=batch, kv_wait_ms=kv_wait_ms,
                              energy_j=None if energy is None else energy.encode + energy.decode,
                              energy_phases_j=energy)
        if result is None:
            end_s = self.clock.now_s()
            return RequestRecord(
                **common, output_tokens=0, first_token_s=None, end_s=end_s, encoder_ms=0.0,
                decoder_ms=0.0, ttft_ms=None, tpot_ms=None,
                latency_ms=(end_s - request.arrival_s) * 1e3, kv_cache_bytes=0,
                kv_cache_used_bytes=0, kv_self_attention_bytes=0, kv_cross_attention_bytes=0,
                error=error or "unknown error")
        decode_start = self.clock.start + start_s
        n = request.output_length
        first_token_s, end_s = to_s(result.first_token), to_s(result.end)
        last_token_s = to_s(result.last_token(n))
        kv = result.kv
        rows = held_by_rows or result.tokens.shape[0]
        return RequestRecord(
            **common, output_tokens=n, first_token_s=first_token_s, end_s=end_s,
            encoder_ms=(result.encoder_done - decode_start) * 1e3,
            decoder_ms=(result.end - result.encoder_done) * 1e3,
            ttft_ms=(first_token_s - request.arrival_s) * 1e3,
            tpot_ms=(last_token_s - first_token_s) * 1e3 / (n - 1) if n > 1 else None,
            latency_ms=(end_s - request.arrival_s) * 1e3,
            kv_cache_bytes=kv.held // rows, kv_cache_used_bytes=kv.used // rows,
            kv_self_attention_bytes=kv.self_attention // rows,
            kv_cross_attention_bytes=kv.cross_attention // rows, error=None,
            last_token_s=last_token_s, tokens=kept)
