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
        self.batcher.leave(list(range(self.batcher.slots)))   # a stopped run may have left some
        self.running: dict[int, _Running] = {}

    @property
    def free_slots(self) -> int:
        return self.batcher.slots - len(self.running)

    @property
    def active(self) -> int:
        return len(self.running)

    def join(self, requests: list[EngineRequest]) -> list[RequestRecord]:
        """Encode the joiners in one call (the running batch waits for it, once) and give each a
        free slot. Returns records of joiners that failed (the running slots go on)."""
        engine = self.engine
        start_s = engine.clock.now_s()
        stall = engine.probe.compile_seconds
        too_long = [r for r in requests if r.output_length > self.batcher.max_new_tokens]
        requests = [r for r in requests if r.output_length <= self.batcher.max_new_tokens]
        failed = self._fail(too_long, start_s, f"ValueError: output length exceeds the static "
                                               f"cache's {self.batcher.max_new_tokens} positions")
        if not requests:
            return failed
        free = [s for s in range(self.batcher.slots) if s not in self.running][:len(requests)]
        rows, width = engine.rows_for(requests)
        engine.probe.set_context(requests[0].id, self.config_id)
        try:
            ids, mask = pad_batch(rows, width, engine.loaded.model.config.pad_token_id,
                                  engine.device)
            engine.with_compile_fallback(self.options, lambda: self.batcher.join(free, ids, mask))
        except Exception as exc:  # the joiners fail; the running slots go on
            engine.flush_probes()
            self.batcher.leave(free)
            return failed + self._fail(requests, start_s, short_error(exc), rows, width)
        encoder_done = mark(engine.device)
        for slot, request, row in zip(free, requests, rows):
            self.running[slot] = _Running(request, row, width, start_s, stall, encoder_done)
        engine.flush_probes()
        return failed

    def step(self) -> list[RequestRecord]:
        """One token for every running request; the records of those that just finished."""
        engine = self.engine
        engine.probe.set_context(f"batch of {self.active}", self.config_id)
        try:
            tokens = engine.with_compile_fallback(self.options,
                                                  lambda: self.batcher.step().tolist())
        except Exception as exc:  # a failed step fails the requests in it, not the engine
            engine.flush_probes()
            return self._finish_all(short_error(exc))
        now = mark(engine.device)
        engine.flush_probes()
        finished, leaving = [], []
        for slot, running in list(self.running.items()):
            running.tokens.append(tokens[slot])
            running.occupancy_sum += self.active
            if running.first_token is None:
                running.first_token = now
            if len(running.tokens) >= running.request.output_length:
                finished.append(self._record(running, now))
                leaving.append(slot)
                del self.running[slot]
        self.batcher.leave(leaving)
        engine.commit(finished)
        return finished

    def _slot_bytes(self, self_positions: int, cross_positions: int) -> int:
        config = self.engine.loaded.model.config
        return kv_cache.used_bytes_formula(
            element_bytes=torch.finfo(self.batcher.dtype).bits // 8, heads=config.num_heads,
            d_kv=config.d_kv, decoder_layers=config.num_decoder_layers,
            self_positions=self_positions, cross_positions=cross_positions)

    def _record(self, running: _Running, end: float) -> RequestRecord:
        """A slot holds its whole region (all self positions, all encoder positions) while the
        request runs; it uses the positions it filled: its own tokens, and the encoder width
        its join batch was padded to (as the other paths count the padded width)."""
        engine, batcher, request = self.engine, self.batcher, running.request
        self_held = self._slot_bytes(batcher.max_new_tokens, 0)
        cross_held = self._slot_bytes(0, batcher.max_input_tokens)
        kv = KVBytes(held=self_held + cross_held,
                     used=self._slot_bytes(len(running.tokens), running.width),
                     self_attention=self_held, cross_attention=cross_held)
        result = DecodeResult(tokens=torch.tensor([running.tokens]), kv=kv,
                              encoder_done=running.encoder_done,
                              first_token=running.first_token or end, end=end)
        stall_ms = (engine.probe.compile_seconds - running.stall_at_start) * 1000.0
        occupancy = running.occupancy_sum / max(len(running.tokens), 1)
        return engine.make_record(request, row=running.row, width=running.width,
                                  start_s=running.start_s, config_id=self.config_id,
                                  batch=occupancy, result=result, stall_ms=stall_ms,
                                  tokens=running.tokens)

    def _fail(self, requests: list[EngineRequest], start_s: float, error: str,
              rows: list[list[int]] | None = None, width: int = 0) -> list[RequestRecord]:
        if not requests:
            return []
        if rows is None:
            rows, width = self.engine.rows_for(requests)
        records = [self.engine.make_record(r, row=row, width=width, start_s=start_s,
                                           config_id=self.config_id, batch=1, error=error)
                   for r, row in zip(requests, rows)]
        self.engine.commit(records)
        return records

    def _finish_all(self, error: str) -> list[RequestRecord]:
        """A failed step fails every running request and frees every slot, so the next join
        starts from a clean batcher."""
        records = [self.engine.make_record(r.request, row=r.row, width=r.width,
                                           start_s=r.start_s, config_id=self.config_id,
                                           batch=self.active, error=error)
                   for r in self.running.values()]
        self.batcher.leave(list(self.running))
        self.running.clear()
        self.engine.commit(records)
        return records
