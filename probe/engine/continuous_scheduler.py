"""Continuous batching's bookkeeping: which request holds which slot, when it joined and at
which step it finishes; each request that finishes becomes a record once its tokens, copied
behind its last step, have reached the host."""

from __future__ import annotations

import time
from collections import defaultdict, deque
from collections.abc import Collection, Iterator
from dataclasses import dataclass

import torch

from probe.contract.records import RequestRecord
from probe.engine.call_errors import short_error
from probe.engine.decode.device_timeline import Fetch, Mark, Timeline, timeline_for
from probe.engine.decode.kv_cache import KVBytes, position_bytes
from probe.engine.decode.paged import PagedBatcher
from probe.engine.decode.result import DecodeResult
from probe.engine.decode.step_times import StepTimes
from probe.engine.engine import Engine
from probe.engine.model.requests import EngineRequest, pad_batch

# Steps the host may queue ahead of the GPU before it waits for the oldest: enough that the
# GPU never waits on the host's bookkeeping, few enough that a record is late by milliseconds.
STEPS_AHEAD = 4
# Joins wait for 1/JOIN_GROUP of the slots to be free (at least one): each join runs the
# encoder eagerly, a few hundred kernel launches of host time, which on an H200 at 256 slots
# and a request finishing nearly every step kept the GPU 22% busy (the step itself replays
# one CUDA graph). 16 joiners at once cost one encoder call; a slot waits at most the steps
# 15 others take to finish. 8 slots (a CPU's) still join one at a time.
JOIN_GROUP = 16


@dataclass
class _Running:
    request: EngineRequest
    row: list[int]
    width: int
    start_s: float
    stall_at_start: float
    encoder_done: Mark
    first_step: int             # the step that makes its first token
    active_sum_at_join: int     # the scheduler's Σ active before its first step
    share_mark: float           # the energy ledger's joules a share at its join
    kv_wait_ms: float = 0.0
    first_token: Mark | None = None


@dataclass(frozen=True)
class _Finishing:
    slot: int
    running: _Running
    steps: int
    end: Mark
    tokens: Fetch
    occupancy: float
    kv: KVBytes                 # read before the slot left (the paged blocks go back)


class _RunningIds(Collection[str]):
    """The running requests' ids, read only when needed (a compile during a step): a step
    hands the graph timer this view instead of copying every slot's id."""

    def __init__(self, running: dict[int, _Running]) -> None:
        self._running = running

    def __iter__(self) -> Iterator[str]:
        return (r.request.id for r in self._running.values())

    def __len__(self) -> int:
        return len(self._running)

    def __contains__(self, request_id: object) -> bool:
        return any(r.request.id == request_id for r in self._running.values())


class ContinuousScheduler:
    """The host's work per step does not grow with the slots: who finishes at which step is
    known when a request joins (its output length is given), tokens stay on the device until
    a request is done, and time is read from marks the GPU has passed (device_timeline.py)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.options, self.config_id = engine.options, engine.config_id
        self.batcher = engine.switchboard.slot_batcher(self.options, engine.settings)
        self.batcher.cancel_admitted()                        # a stopped run may have left
        self.batcher.leave(list(range(self.batcher.slots)))   # promises and slots behind
        self.timeline: Timeline = timeline_for(engine.device)
        self.running: dict[int, _Running] = {}
        self._running_ids = _RunningIds(self.running)
        # taken off the queue, waiting for KV blocks (paged layout), with their input ids and
        # when they were taken; their queue time goes on
        self.waiting: deque[tuple[EngineRequest, list[int], float]] = deque()
        self.steps = 0
        self._active_sum = 0                          # Σ running requests over the steps
        self._ends: dict[int, list[int]] = defaultdict(list)      # step → slots done at it
        self._firsts: dict[int, list[_Running]] = defaultdict(list)
        self._finishing: deque[_Finishing] = deque()  # done, their tokens on the way
        # steps queued, not yet passed, and whether a compile ran in each
        self._in_flight: deque[tuple[Mark, bool]] = deque()
        self.step_times = StepTimes()

    @property
    def join_at(self) -> int:
        """The free slots a join waits for while requests run."""
        return max(1, self.batcher.slots // JOIN_GROUP)

    @property
    def free_slots(self) -> int:
        return self.batcher.slots - len(self.running)

    @property
    def active(self) -> int:
        """Requests in slots, and those done whose tokens are still on their way."""
        return len(self.running) + len(self._finishing)

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
        engine.graph_timer.set_context(self.config_id, tuple(r.id for r in requests))
        energy_start = engine.energy.begin(self.config_id)
        encode_work = [(r.id, width) for r in requests]
        started = time.perf_counter()
        try:
            ids, mask = pad_batch(rows, width, engine.dims.pad_token_id, engine.device)
            outputs = [r.output_length for r in requests]
            engine.with_compile_fallback(self.options,
                                         lambda: self.batcher.join(free, ids, mask, outputs))
        except Exception as exc:  # the joiners fail; the running slots go on
            self._joined(started, stall)
            engine.energy.end(self.config_id, energy_start, "encode", encode_work)
            engine.flush_probes()
            self.batcher.cancel_admitted()
            self.batcher.leave(free)
            return self._fail([(r, row) for r, row, _ in admitted], start_s, short_error(exc),
                              width)
        encoder_done = self.timeline.mark()
        self._joined(started, stall)
        engine.energy.end(self.config_id, energy_start, "encode", encode_work)
        first = self.steps + 1
        for slot, (request, row, taken_s) in zip(free, admitted):
            running = _Running(request, row, width, start_s, stall, encoder_done, first,
                               self._active_sum, engine.energy.share_mark(),
                               kv_wait_ms=(start_s - taken_s) * 1e3)
            self.running[slot] = running
            self._firsts[first].append(running)
            self._ends[self.steps + request.output_length].append(slot)
        engine.flush_probes()
        return []

    def serve_all(self, requests: list[EngineRequest],
                  per_join: int | None = None) -> list[RequestRecord]:
        """Serve `requests` to the end without a serving loop, as it would: each step, as many
        join as there are free slots (at most `per_join`), then one step. What gpu-check's
        layout comparison and the scheduler's tests drive."""
        waiting, records = list(requests), []
        while waiting or self.active:
            room = self.free_slots if per_join is None else min(self.free_slots, per_join)
            joiners = waiting[:max(0, room)]
            del waiting[:len(joiners)]
            if joiners:
                records += self.join(joiners)
            records += self.step()
        return records

    def _joined(self, started: float, compile_before: float) -> None:
        """A join's host time, a compile inside it taken out (the compile feed shows that)."""
        compiled_s = self.engine.probe.compile_seconds - compile_before
        self.step_times.join(max(0.0, time.perf_counter() - started - compiled_s))

    def step(self) -> list[RequestRecord]:
        """One token for every running request; the records of those whose tokens have
        reached the host (a step or a few after their last one, or at once when nothing else
        runs)."""
        if not self.running:
            return self._settle(wait=True)
        engine = self.engine
        engine.probe.set_context(f"batch of {len(self.running)}", self.config_id)
        engine.graph_timer.set_context(self.config_id, self._running_ids)
        started = time.perf_counter()
        compile_before = engine.probe.compile_seconds
        energy_start = engine.energy.begin(self.config_id)
        try:
            engine.with_compile_fallback(self.options, self.batcher.step)
        except Exception as exc:  # a failed step fails the requests in it, not the engine
            engine.energy.end_shared(self.config_id, energy_start, len(self.running))
            engine.flush_probes()
            return self._settle(wait=True) + self._finish_all(short_error(exc))
        engine.energy.end_shared(self.config_id, energy_start, len(self.running))
        engine.session.set_energy(self.config_id, engine.energy.config_energy(self.config_id))
        self.steps += 1
        self._active_sum += len(self.running)
        done = self.timeline.mark()
        for running in self._firsts.pop(self.steps, []):
            running.first_token = done
        leaving = self._ends.pop(self.steps, [])
        for slot in leaving:
            running = self.running.pop(slot)
            engine.energy.settle_share(running.request.id, running.share_mark)
            steps = self.steps - running.first_step + 1
            self._finishing.append(_Finishing(
                slot, running, steps, done, self.timeline.fetch(self.batcher.read(slot, steps)),
                (self._active_sum - running.active_sum_at_join) / steps,
                self._kv(slot, running, steps)))
        self.batcher.leave(leaving)
        engine.flush_probes()
        compiled = engine.probe.compile_seconds > compile_before
        self.step_times.add(time.perf_counter() - started, rows=self.batcher.last_rows,
                            running=len(self.running) + len(leaving), compiled=compiled)
        self._in_flight.append((done, compiled))
        while self._in_flight and (self._in_flight[0][0].ready()
                                   or len(self._in_flight) > STEPS_AHEAD):
            passed, passed_compiled = self._in_flight.popleft()
            self.step_times.passed(self.timeline.seconds(passed),   # waits if not ready
                                   compiled=passed_compiled)
        if not self.running:
            self.step_times.idle()
        pool = self.batcher.info()
        if pool is not None:
            engine.session.set_kv_pool(self.config_id, pool)
        engine.session.set_batch_steps(self.config_id, self.step_times.snapshot(
            self.batcher.slots, self.batcher.graphs.sizes if self.batcher.graphs else (),
            on_gpu=engine.device.type == "cuda"))
        return self._settle(wait=not self.running)

    def _settle(self, *, wait: bool) -> list[RequestRecord]:
        """Records of the finished requests whose tokens reached the host, in the order they
        finished; `wait`: all of them."""
        finished = []
        while self._finishing and (wait or self._finishing[0].tokens.mark.ready()):
            done = self._finishing.popleft()
            self.timeline.wait(done.tokens.mark)
            finished.append(self._record(done))
        self.engine.commit(finished)
        return finished

    def _slot_bytes(self, self_positions: int, cross_positions: int) -> int:
        per_position = position_bytes(self.engine.dims, self.batcher.dtype.itemsize)
        return per_position * (self_positions + cross_positions)

    def _kv(self, slot: int, running: _Running, steps: int) -> KVBytes:
        """Held: the slot's whole region (static) or the blocks it holds (paged). Used: the
        positions it filled — its own tokens, and the encoder positions its cache keeps (the
        width its join batch was padded to in the static region, its real length in blocks)."""
        batcher = self.batcher
        if isinstance(batcher, PagedBatcher):
            self_held, cross_held = batcher.held_bytes(slot)
            cross_used = len(running.row)
        else:
            self_held = self._slot_bytes(batcher.max_new_tokens, 0)
            cross_held = self._slot_bytes(0, batcher.max_input_tokens)
            cross_used = running.width
        return KVBytes(held=self_held + cross_held, used=self._slot_bytes(steps, cross_used),
                       self_attention=self_held, cross_attention=cross_held)

    def _record(self, done: _Finishing) -> RequestRecord:
        engine, running, kv = self.engine, done.running, done.kv
        tokens = done.tokens.values()
        seconds = self.timeline.seconds
        end = seconds(done.end)
        result = DecodeResult(tokens=torch.tensor([tokens]), kv=kv,
                              encoder_done=seconds(running.encoder_done),
                              first_token=seconds(running.first_token or done.end), end=end)
        stall_ms = (engine.probe.compile_seconds - running.stall_at_start) * 1000.0
        return engine.make_record(running.request, row=running.row, width=running.width,
                                  start_s=running.start_s, config_id=self.config_id,
                                  batch=done.occupancy, result=result, stall_ms=stall_ms,
                                  tokens=tokens, kv_wait_ms=running.kv_wait_ms,
                                  energy=engine.energy.take(running.request.id))

    def tokens_so_far(self, request_ids: Collection[str]) -> dict[str, list[int]]:
        """The tokens each of these running requests has made so far (a server streams them
        as they come). On a GPU each read waits for the step that made it: only requests
        that stream ask for it."""
        made = {}
        for slot, running in self.running.items():
            count = self.steps - running.first_step + 1
            if running.request.id in request_ids and count > 0:
                made[running.request.id] = self.batcher.read(slot, count).tolist()
        return made

    def cancel(self, request_ids: Collection[str], error: str) -> list[RequestRecord]:
        """Requests nobody waits for any more (a client that left): out of their slots and
        the KV wait now, their blocks back to the pool, one failed record each."""
        records = []
        for slot, running in list(self.running.items()):
            if running.request.id not in request_ids:
                continue
            del self.running[slot]
            self._ends[running.first_step - 1 + running.request.output_length].remove(slot)
            firsts = self._firsts.get(running.first_step, [])
            if running in firsts:
                firsts.remove(running)
            self.batcher.leave([slot])
            records.append(self._failed(running, error, batch=1))
        waiting = [w for w in self.waiting if w[0].id in request_ids]
        for item in waiting:
            self.waiting.remove(item)
        self.engine.commit(records)
        return records + self._fail([(r, row) for r, row, _ in waiting],
                                    self.engine.clock.now_s(), error)

    def _fail(self, failing: list[tuple[EngineRequest, list[int]]], start_s: float,
              error: str, width: int | None = None) -> list[RequestRecord]:
        """Records of requests that failed before decoding (a whole join batch shares its
        `width`; a request refused alone is its own width)."""
        if not failing:
            return []
        records = [self.engine.make_record(
            r, row=row, width=width or self.engine.padded_width([row]), start_s=start_s,
            config_id=self.config_id, batch=1, error=error,
            energy=self.engine.energy.take(r.id)) for r, row in failing]
        self.engine.commit(records)
        return records

    def _failed(self, running: _Running, error: str, *, batch: int) -> RequestRecord:
        """The record of a request that failed in its slot, its share of the steps' joules
        settled."""
        energy = self.engine.energy
        energy.settle_share(running.request.id, running.share_mark)
        return self.engine.make_record(running.request, row=running.row, width=running.width,
                                       start_s=running.start_s, config_id=self.config_id,
                                       batch=batch, error=error,
                                       energy=energy.take(running.request.id))

    def _finish_all(self, error: str) -> list[RequestRecord]:
        """A failed step fails every running request and frees every slot, so the next join
        starts from a clean batcher."""
        records = [self._failed(r, error, batch=len(self.running))
                   for r in self.running.values()]
        self.batcher.leave(list(self.running))
        self.running.clear()
        self._ends.clear()
        self._firsts.clear()
        self.engine.commit(records)
        return records
