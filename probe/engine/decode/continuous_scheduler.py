"""Continuous batching's bookkeeping: which request holds which slot, when it joined, its
tokens so far; each request that finishes becomes a record the moment its last token exists."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import torch

from probe.contract.records import RequestRecord
from probe.engine.decode import kv_cache
from probe.engine.decode.kv_cache import KVBytes
from probe.engine.decode.paged import PagedBatcher
from probe.engine.decode.result import DecodeResult
from probe.engine.engine import Engine, short_error
from probe.engine.measure.timing import mark
from probe.engine.requests import EngineRequest, pad_batch


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
    kv_wait_ms: float = 0.0


class ContinuousScheduler:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.options, self.config_id = engine.options, engine.config_id
        self.batcher = engine.switchboard.slot_batcher(self.options, engine.settings)
        self.batcher.cancel_admitted()                        # a stopped run may have left
        self.batcher.leave(list(range(self.batcher.slots)))   # promises and slots behind
        self.running: dict[int, _Running] = {}
        # taken off the queue, waiting for KV blocks (paged layout), with their input ids and
        # when they were taken; their queue time goes on
        self.waiting: deque[tuple[EngineRequest, list[int], float]] = deque()

    @property
    def free_slots(self) -> int:
        return self.batcher.slots - len(self.running)

    @property
    def active(self) -> int:
        return len(self.running)

    def join(self, requests: list[EngineRequest]) -> list[RequestRecord]:
        """Queue the arrivals behind those already waiting, then admit in arrival order while
        a slot is free and the KV cache can hold the next one. The admitted are encoded in one
        call (the running batch waits for it, once). Returns records of requests that failed:
        ones that can never fit, or joiners whose encoding failed (the running slots go on)."""
        engine = self.engine
        start_s = engine.clock.now_s()
        never = []
        for request in requests:
            row = engine.row_for(request)      # its ids are made once, however long it waits
            if self.batcher.fits(len(row), request.output_length):
                self.waiting.append((request, row, start_s))
            else:
                never.append((request, row))
        failed = self._fail(never, start_s, f"ValueError: the request needs more than the KV "
                                            f"cache holds ({self.batcher.capacity_text()})")
        admitted: list[tuple[EngineRequest, list[int], float]] = []
        while self.waiting and len(admitted) < self.free_slots:
            request, row, _ = self.waiting[0]
            if not self.batcher.admit(len(row), request.output_length):
                break        # first come, first served: no one overtakes the head
            admitted.append(self.waiting.popleft())
        return failed + (self._encode(admitted, start_s) if admitted else [])

    def _encode(self, admitted: list[tuple[EngineRequest, list[int], float]],
                start_s: float) -> list[RequestRecord]:
        engine = self.engine
        stall = engine.probe.compile_seconds
        free = [s for s in range(self.batcher.slots) if s not in self.running][:len(admitted)]
        requests = [request for request, _, _ in admitted]
        rows = [row for _, row, _ in admitted]
        width = engine.padded_width(rows)
        engine.probe.set_context(requests[0].id, self.config_id)
        try:
            ids, mask = pad_batch(rows, width, engine.dims.pad_token_id, engine.device)
            outputs = [r.output_length for r in requests]
            engine.with_compile_fallback(self.options,
                                         lambda: self.batcher.join(free, ids, mask, outputs))
        except Exception as exc:  # the joiners fail; the running slots go on
            engine.flush_probes()
            self.batcher.cancel_admitted()
            self.batcher.leave(free)
            return self._fail([(r, row) for r, row, _ in admitted], start_s, short_error(exc),
                              width)
        encoder_done = mark(engine.device)
        for slot, (request, row, taken_s) in zip(free, admitted):
            self.running[slot] = _Running(request, row, width, start_s, stall, encoder_done,
                                          kv_wait_ms=(start_s - taken_s) * 1e3)
        engine.flush_probes()
        return []

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
                finished.append(self._record(slot, running, now))
                leaving.append(slot)
                del self.running[slot]
        self.batcher.leave(leaving)
        pool = self.batcher.info()
        if pool is not None:
            engine.session.set_kv_pool(self.config_id, pool)
        engine.commit(finished)
        return finished

    def _slot_bytes(self, self_positions: int, cross_positions: int) -> int:
        dims = self.engine.dims
        return kv_cache.used_bytes_formula(
            element_bytes=torch.finfo(self.batcher.dtype).bits // 8, heads=dims.heads,
            d_kv=dims.d_kv, decoder_layers=dims.layers, self_positions=self_positions,
            cross_positions=cross_positions)

    def _record(self, slot: int, running: _Running, end: float) -> RequestRecord:
        """Held: the slot's whole region (static) or the blocks it holds (paged). Used: the
        positions it filled — its own tokens, and the encoder positions its cache keeps (the
        width its join batch was padded to in the static region, its real length in blocks)."""
        engine, batcher, request = self.engine, self.batcher, running.request
        if isinstance(batcher, PagedBatcher):
            self_held, cross_held = batcher.held_bytes(slot)
            cross_used = len(running.row)
        else:
            self_held = self._slot_bytes(batcher.max_new_tokens, 0)
            cross_held = self._slot_bytes(0, batcher.max_input_tokens)
            cross_used = running.width
        kv = KVBytes(held=self_held + cross_held,
                     used=self._slot_bytes(len(running.tokens), cross_used),
                     self_attention=self_held, cross_attention=cross_held)
        result = DecodeResult(tokens=torch.tensor([running.tokens]), kv=kv,
                              encoder_done=running.encoder_done,
                              first_token=running.first_token or end, end=end)
        stall_ms = (engine.probe.compile_seconds - running.stall_at_start) * 1000.0
        occupancy = running.occupancy_sum / max(len(running.tokens), 1)
        return engine.make_record(request, row=running.row, width=running.width,
                                  start_s=running.start_s, config_id=self.config_id,
                                  batch=occupancy, result=result, stall_ms=stall_ms,
                                  tokens=running.tokens, kv_wait_ms=running.kv_wait_ms)

    def _fail(self, failing: list[tuple[EngineRequest, list[int]]], start_s: float,
              error: str, width: int | None = None) -> list[RequestRecord]:
        """Records of requests that failed before decoding (a whole join batch shares its
        `width`; a request refused alone is its own width)."""
        if not failing:
            return []
        records = [self.engine.make_record(
            r, row=row, width=width or self.engine.padded_width([row]), start_s=start_s,
            config_id=self.config_id, batch=1, error=error) for r, row in failing]
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
