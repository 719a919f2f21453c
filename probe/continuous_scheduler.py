"""Continuous batching's bookkeeping: which request holds which slot, when it joined, its
tokens so far; each request that finishes becomes a record the moment its last token exists."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from probe import kv_cache
from probe.decode_result import DecodeResult
from probe.engine import Engine, short_error
from probe.kv_cache import KVBytes
from probe.records import RequestRecord
from probe.requests import EngineRequest, pad_batch
from probe.timing import mark


@dataclass
class _Running:
    request: EngineRequest
    row: list[int]
    width: int
    start_s: float
    stall_at_start: float
    encoder_done: float
    first_token: float | None = None
    tokens: list[int] = field(default_factory=list)
    occupancy_sum: int = 0


class ContinuousScheduler:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.options, self.config_id = engine.options, engine.config_id
        self.batcher = engine.switchboard.slot_batcher(
            self.options, slots=engine.settings.max_batch,
            max_input_tokens=engine.settings.max_input_tokens)
        self.running: dict[int, _Running] = {}

    @property
    def free_slots(self) -> int:
        return self.batcher.slots - len(self.running)

    @property
    def active(self) -> int:
        return len(self.running)

    def join(self, requests: list[EngineRequest]) -> list[RequestRecord]:
        """Encode the joiners in one call (the running batch waits for it, once) and give each a
        free slot. Returns records of joiners that failed."""
        engine = self.engine
        start_s = engine.clock.now_s()
        stall = engine.probe.compile_seconds
        free = [s for s in range(self.batcher.slots) if s not in self.running][:len(requests)]
        rows, width = engine.rows_for(requests)
        engine.probe.set_context(requests[0].id, self.config_id)
        try:
            ids, mask = pad_batch(rows, width, engine.loaded.model.config.pad_token_id,
                                  engine.device)
            with torch.inference_mode():
                self.batcher.join(free, ids, mask)
        except Exception as exc:  # the joiners fail; the running slots go on
            engine.flush_probes()
            error = short_error(exc)
            records = [engine.make_record(r, row, width, None, error, start_s, 0.0,
                                          self.config_id, 1) for r, row in zip(requests, rows)]
            engine.commit(records, {})
            return records
        encoder_done = mark(engine.device)
        for slot, request, row in zip(free, requests, rows):
            self.running[slot] = _Running(request, row, width, start_s, stall, encoder_done)
        engine.flush_probes()
        return []

    def step(self) -> list[RequestRecord]:
        """One token for every running request; the records of those that just finished."""
        engine = self.engine
        engine.probe.set_context(f"batch of {self.active}", self.config_id)
        try:
            with torch.inference_mode():
                tokens = self.batcher.step().tolist()
        except Exception as exc:  # a failed step fails the requests in it, not the engine
            engine.flush_probes()
            return self._finish_all(short_error(exc))
        now = mark(engine.device)
        engine.flush_probes()
        finished, finished_tokens = [], {}
        for slot, running in list(self.running.items()):
            running.tokens.append(tokens[slot])
            running.occupancy_sum += self.active
            if running.first_token is None:
                running.first_token = now
            if len(running.tokens) >= running.request.output_length:
                finished.append(self._record(running, now))
                finished_tokens[running.request.id] = running.tokens
                del self.running[slot]
        engine.commit(finished, finished_tokens)
        return finished

    def _slot_bytes(self, self_positions: int, cross_positions: int) -> int:
        config = self.engine.loaded.model.config
        return kv_cache.used_bytes_formula(
            element_bytes=torch.finfo(self.batcher.dtype).bits // 8, heads=config.num_heads,
            d_kv=config.d_kv, decoder_layers=config.num_decoder_layers,
            self_positions=self_positions, cross_positions=cross_positions)

    def _record(self, running: _Running, end: float) -> RequestRecord:
        """A slot holds its whole region (all self positions, all encoder positions) while the
        request runs; it uses the positions it filled."""
        engine, batcher, request = self.engine, self.batcher, running.request
        self_held = self._slot_bytes(batcher.max_new_tokens, 0)
        cross_held = self._slot_bytes(0, batcher.max_input_tokens)
        kv = KVBytes(held=self_held + cross_held,
                     used=self._slot_bytes(len(running.tokens), len(running.row)),
                     self_attention=self_held, cross_attention=cross_held)
        result = DecodeResult(tokens=torch.tensor([running.tokens]), kv=kv,
                              encoder_done=running.encoder_done,
                              first_token=running.first_token or end, end=end)
        stall_ms = (engine.probe.compile_seconds - running.stall_at_start) * 1000.0
        occupancy = running.occupancy_sum / max(len(running.tokens), 1)
        return engine.make_record(request, running.row, running.width, result, None,
                                  running.start_s, stall_ms, self.config_id, occupancy)

    def _finish_all(self, error: str) -> list[RequestRecord]:
        records = [self.engine.make_record(r.request, r.row, r.width, None, error, r.start_s,
                                           0.0, self.config_id, self.active)
                   for r in self.running.values()]
        self.running.clear()
        self.engine.commit(records, {})
        return records
