"""A synthetic, deterministic session: a TEST FIXTURE, not a measurement. No model, no
torch.compile; its figures are hand-set to look like a t5-small-shaped model on a 2-core CPU
(~17.5 ms/token eager with HF generate(), ~12 ms/token compiled, a ~62 s first compile, ~20-24 s
recompiles on each new input length, 12 graph breaks in generate()) so the panels can be tested
on repeatable states. Nothing presented as a result is drawn from it: the README's screenshots
are recorded sessions (screenshots/sessions/). Records are built by a one-server queue
simulation; every figure shown is then computed by the real `probe.analysis.live_figures.build_live`.

Stages (what `stage(name)` returns):
- "baseline":   c1 eager, steady.
- "compiling":  c2 compile=default, its first request waiting 23 s into the first compile.
- "compiled":   c2 after its compile and recompiles (size-mismatch guard failures).
- "bucketing":  c3 compile=default bucketing=on: a compile per bucket, then steady.

Stages that stress the dashboard's text, each derived from one above and recomputed by
build_live where records change (hand-made states for layout tests, not measurements):
- "overloaded": baseline with arrivals faster than the engine serves; the queue grows.
- "failing":    compiled, with every fourth c2 request failed (ERRORS).
- "continuous": c4 continuous batching, asked with decode=hf-generate (ASKED); the engine
                serves it with fullgraph and its config's note says why. Its static layout
                holds a whole slot region (SLOT_*_POSITIONS) per request.
- "paged":      continuous, then c5 kv_layout=paged serving its last 40 requests: blocks of
                BLOCK_TOKENS positions for the real lengths, from a pool of the same budget
                as MAX_BATCH static slots (kv_pool).
- "measured":   compiled, with what the engine measures besides latency: drift against the
                reference on every DRIFT_EVERY-th request (c2's compile moves a few tokens),
                this machine's roofline (ROOFLINE), and c2's break-even against c1.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Callable

from probe.analysis.live_figures import build_live, capacity_rps
from probe.contract.device_sample import DeviceSample
from probe.contract.live import LiveView, ReplayStatus
from probe.contract.options import OptConfig
from probe.contract.records import (
    CompileEvent,
    CompileInProgress,
    GraphBreakRecord,
    KVPool,
    RequestRecord,
    RooflineStatus,
)
from probe.contract.session import ConfigEntry, SessionData

STAGES = ("baseline", "compiling", "compiled", "bucketing", "overloaded", "failing",
          "continuous", "paged", "measured")
BUCKET_EDGES = (32, 64, 128, 256, 512)
ARRIVAL_RPS = 0.5
# t5-small: 6 decoder layers · 8 heads · d_kv 64 · K and V · 4 bytes (fp32) per position
KV_BYTES_PER_POSITION = 6 * 8 * 64 * 2 * 4
STATIC_SELF_POSITIONS = 512
GiB = 1024 ** 3


@dataclass(frozen=True)
class Stall:
    """A compile the request at `index` (within its phase) waits on."""
    compile_id: str
    kind: str
    function: str
    duration_s: float
    reason: str | None = None
    graphs: int = 1


@dataclass(frozen=True)
class Phase:
    options: OptConfig
    requests: int
    tpot_ms: float
    stalls: dict[int, tuple[Stall, ...]] = field(default_factory=dict)
    breaks: tuple[tuple[str, str, int], ...] = ()     # (reason, location, count)
    static_cache: bool = False


def _mismatch(entry: str, expected: int, actual: int) -> str:
    return f"{entry}: tensor 'input_ids' size mismatch at index 1. expected {expected}, actual {actual}"


HF_BREAKS = (
    ("Data-dependent branching", "transformers/generation/stopping_criteria.py:512", 6),
    ("Tensor.item() call with capture_scalar_outputs=False",
     "transformers/generation/utils.py:2785", 4),
    ("Dynamic shape operator: aten.nonzero.default", "transformers/generation/utils.py:2799", 2),
)

PHASES = (
    Phase(OptConfig(), requests=60, tpot_ms=17.5),
    Phase(OptConfig(compile="default"), requests=140, tpot_ms=12.0, breaks=HF_BREAKS, stalls={
        0: (Stall("0/0", "compile", "forward", 61.8, graphs=13),),
        1: (Stall("0/1", "recompile", "forward", 23.9, _mismatch("0/0", 64, 37), graphs=11),),
        3: (Stall("0/2", "recompile", "forward", 21.4, _mismatch("0/1", 37, 112), graphs=11),),
        6: (Stall("0/3", "recompile", "forward", 20.7, _mismatch("0/2", 112, 23), graphs=11),),
    }),
    Phase(OptConfig(compile="default", bucketing="on"), requests=160, tpot_ms=11.6,
          breaks=HF_BREAKS, stalls={
              0: (Stall("0/0", "compile", "forward", 58.2, graphs=13),),
              1: (Stall("0/1", "recompile", "forward", 20.1, _mismatch("0/0", 64, 128), graphs=11),),
              4: (Stall("0/2", "recompile", "forward", 19.6, _mismatch("0/1", 128, 256), graphs=11),),
          }),
)


@dataclass(frozen=True)
class _Arrival:
    input_tokens: int
    output_tokens: int
    arrival_s: float


def _arrivals(count: int, seed: int = 7) -> list[_Arrival]:
    rng = random.Random(seed)
    now, out = 1.0, []
    for _ in range(count):
        now += rng.expovariate(ARRIVAL_RPS)
        inputs = min(max(int(rng.lognormvariate(4.4, 0.7)), 6), 480)
        outputs = min(max(int(rng.lognormvariate(3.6, 0.6)), 4), 160)
        out.append(_Arrival(inputs, outputs, now))
    return out


def _bucket(length: int, options: OptConfig) -> int:
    if options.bucketing != "on":
        return length
    return next((edge for edge in BUCKET_EDGES if edge >= length), length)


@dataclass
class _Simulation:
    records: list[RequestRecord] = field(default_factory=list)
    events: list[CompileEvent] = field(default_factory=list)
    breaks: list[GraphBreakRecord] = field(default_factory=list)
    configs: dict[str, ConfigEntry] = field(default_factory=dict)
    arrivals: list[_Arrival] = field(default_factory=list)

    def run(self) -> None:
        # more arrivals than are served: the replay goes on after the last stage
        arrivals = self.arrivals = _arrivals(sum(p.requests for p in PHASES) + 60)
        free_at, seq = 0.0, 0
        for number, phase in enumerate(PHASES, start=1):
            config_id = f"c{number}"
            self.configs[config_id] = ConfigEntry(config_id, phase.options)
            self.breaks += [GraphBreakRecord(config_id, r, loc, n) for r, loc, n in phase.breaks]
            for index in range(phase.requests):
                free_at = self._serve(arrivals[seq], seq, phase, config_id, index, free_at)
                seq += 1

    def _serve(self, arrival: _Arrival, seq: int, phase: Phase, config_id: str, index: int,
               free_at: float) -> float:
        request_id = f"req-{seq:04d}"
        start = max(arrival.arrival_s, free_at)
        padded = _bucket(arrival.input_tokens, phase.options)
        encoder_ms = 4.0 + 0.09 * padded
        stall_s = 0.0
        for stall in phase.stalls.get(index, ()):
            self.events.append(CompileEvent(
                stall.compile_id, stall.kind, stall.function, start + 0.02 + stall_s,
                stall.duration_s, stall.reason, request_id, config_id, stall.graphs))
            stall_s += stall.duration_s
        first_token = start + stall_s + (encoder_ms + phase.tpot_ms) / 1000.0
        decoder_ms = phase.tpot_ms * arrival.output_tokens
        end = start + stall_s + (encoder_ms + decoder_ms) / 1000.0
        self_positions = STATIC_SELF_POSITIONS if phase.static_cache else arrival.output_tokens
        self_bytes = self_positions * KV_BYTES_PER_POSITION
        cross_bytes = padded * KV_BYTES_PER_POSITION
        used = (arrival.output_tokens + arrival.input_tokens) * KV_BYTES_PER_POSITION
        self.records.append(RequestRecord(
            id=request_id, seq=seq, config_id=config_id, input_tokens=arrival.input_tokens,
            padded_tokens=padded, output_tokens=arrival.output_tokens,
            arrival_s=arrival.arrival_s, start_s=start, first_token_s=first_token, end_s=end,
            queue_ms=(start - arrival.arrival_s) * 1e3, compile_stall_ms=stall_s * 1e3,
            encoder_ms=encoder_ms, decoder_ms=decoder_ms,
            ttft_ms=(first_token - arrival.arrival_s) * 1e3,
            tpot_ms=(end - first_token) * 1e3 / (arrival.output_tokens - 1),
            latency_ms=(end - arrival.arrival_s) * 1e3, kv_cache_bytes=self_bytes + cross_bytes,
            kv_cache_used_bytes=used, kv_self_attention_bytes=self_bytes,
            kv_cross_attention_bytes=cross_bytes))
        return end


_SIM: _Simulation | None = None


def simulation() -> _Simulation:
    global _SIM
    if _SIM is None:
        _SIM = _Simulation()
        _SIM.run()
    return _SIM


def _stage_time(name: str) -> tuple[float, str]:
    """(session time of the stage, config served then)."""
    sim = simulation()
    by_config = {cid: [r for r in sim.records if r.config_id == cid] for cid in sim.configs}
    if name == "baseline":
        return by_config["c1"][-1].end_s + 0.4, "c1"
    if name == "compiling":
        first = by_config["c2"][0]
        return first.start_s + 23.4, "c2"
    if name == "compiled":
        return by_config["c2"][-1].end_s + 0.4, "c2"
    if name == "bucketing":
        return by_config["c3"][-1].end_s + 0.4, "c3"
    raise ValueError(f"unknown stage {name!r}; choose one of {', '.join(STAGES)}")


def session_at(t_s: float, config_id: str) -> SessionData:
    """The raw session as the engine would hold it at `t_s`, serving `config_id`."""
    sim = simulation()
    last = int(config_id[1:])
    configs = {cid: entry for cid, entry in sim.configs.items() if int(cid[1:]) <= last}
    events = [e for e in sim.events
              if e.duration_s is not None and e.start_s + e.duration_s <= t_s]
    served = {e.config_id for e in events} | {r.config_id for r in sim.records if r.end_s <= t_s}
    return SessionData(
        records=tuple(r for r in sim.records if r.end_s <= t_s),
        events=tuple(events),
        breaks=tuple(b for b in sim.breaks if b.config_id in served),
        configs=MappingProxyType(configs))


def _replay(t_s: float, speed: float) -> ReplayStatus:
    sim = simulation()
    dispatched = sum(a.arrival_s <= t_s for a in sim.arrivals)
    completed = sum(r.end_s <= t_s for r in sim.records)
    window = 60.0
    offered = sum(t_s - window < a.arrival_s <= t_s for a in sim.arrivals) / window
    capacity = capacity_rps([r for r in sim.records if t_s - window < r.end_s <= t_s])
    queue = dispatched - completed
    return ReplayStatus(trace="chat", running=True, paused=False, speed=speed,
                        dispatched=dispatched, completed=completed, failed=0, total=None,
                        queue_depth=queue, offered_rps=offered, capacity_rps=capacity,
                        overloaded=bool(queue > 4 and capacity and offered > capacity))


def _device(stage_name: str) -> DeviceSample:
    rss = 1.31 if stage_name == "baseline" else 2.08
    return DeviceSample(kind="CPU", name="2 cores", util_pct=98.5 if stage_name != "baseline" else 61.0,
                        mem_used_bytes=int(rss * GiB), mem_total_bytes=int(15.6 * GiB),
                        mem_free_bytes=int((11.9 - rss) * GiB),
                        process_cpu_pct=99.0 if stage_name != "baseline" else 98.0)


def stage(name: str, *, speed: float = 1.0) -> LiveView:
    """The LiveView the engine would publish at that stage of the synthetic session."""
    if name in _STRESSED:
        base, make = _STRESSED[name]
        return make(_simulated(base, speed))
    return _simulated(name, speed)


def _simulated(name: str, speed: float) -> LiveView:
    t_s, config_id = _stage_time(name)
    data = session_at(t_s, config_id)
    options = simulation().configs[config_id].options
    compiling = None
    if name == "compiling":
        opening = next(e for e in simulation().events if e.config_id == config_id)
        # dynamo names the function only once the first compile of a frame is over
        compiling = CompileInProgress(opening.compile_id, None, opening.request_id,
                                      opening.start_s, waited_before_s=0.0)
    return build_live(
        data, t_s=t_s, model="t5-small", device="cpu", options=options, config_id=config_id,
        window_start_seq=0, compiling_since_s=compiling.since_s if compiling else None,
        compiling_request=compiling.request_id if compiling else None,
        device_sample=_device(name), replay=_replay(t_s, speed),
        bucket_edges=BUCKET_EDGES if options.bucketing == "on" else (), compiling=compiling)


# -- stages that stress the text ----------------------------------------------------------------
# A failure's error is `Type: message` (probe.engine.call_errors.short_error); "[/]" would end a session
# that rendered it as markup.
ERRORS = ("OutOfMemoryError: CPU out of memory. Tried to allocate 1.50 GiB [/] (12.1 GiB free)",
          "RuntimeError: The size of tensor a (512) must match the size of tensor b (513)")
CONTINUOUS = OptConfig(decode="fullgraph", batching="continuous")
CONTINUOUS_NOTE = "continuous batching runs its own static-cache step loop: decode=fullgraph"
PAGED = CONTINUOUS.with_option("kv_layout", "paged")
# What the dashboard asked for, where the engine serves something else; the engine received it
ASKED = {"continuous": OptConfig(batching="continuous"),
         "paged": OptConfig(batching="continuous", kv_layout="paged")}
MAX_BATCH = 8
# A static slot holds max new tokens of self-attention and max input of cross-attention
SLOT_SELF_POSITIONS, SLOT_CROSS_POSITIONS = 256, 512
BLOCK_TOKENS = 16
DRIFT_EVERY = 4
# This machine's roofline for t5-small in fp32: 153.9 MB of weights per step at 31.8 GB/s,
# measured (and cached) three days before the session
MEASURED_UNIX = time.time() - 3.2 * 86400
ROOFLINE = RooflineStatus(precision="fp32", step_bytes=153_900_000, bandwidth_gb_s=31.8,
                          measured_unix=MEASURED_UNIX,
                          roofline_ms=153_900_000 / (31.8 * 1e9) * 1e3)


def _rebuilt(base: LiveView, data: SessionData, **changes) -> LiveView:
    """`base` recomputed by build_live from other raw records."""
    args = dict(t_s=base.t_s, model=base.model, device=base.device, options=base.options,
                config_id=base.config_id, window_start_seq=0,
                compiling_since_s=base.compiling_since_s,
                compiling_request=base.compiling_request, device_sample=base.device_sample,
                replay=base.replay, bucket_edges=base.bucket_edges, compiling=base.compiling,
                roofline=base.roofline, requested_options=base.requested_options,
                options_pending=base.options_pending, max_batch=base.batch.max_batch)
    return build_live(data, **{**args, **changes})


def _overloaded(base: LiveView) -> LiveView:
    replay = replace(base.replay, offered_rps=1.46, capacity_rps=0.91, queue_depth=23,
                     overloaded=True)
    return replace(base, replay=replay)


def _failed(record: RequestRecord, error: str) -> RequestRecord:
    return replace(record, output_tokens=0, first_token_s=None, ttft_ms=None, tpot_ms=None,
                   kv_cache_bytes=0, kv_cache_used_bytes=0, kv_self_attention_bytes=0,
                   kv_cross_attention_bytes=0, error=error)


def _failing(base: LiveView) -> LiveView:
    data = session_at(base.t_s, base.config_id)
    records, failed = [], 0
    for record in data.records:
        if record.config_id == base.config_id and record.seq % 4 == 0:
            record = _failed(record, ERRORS[1 if failed % 5 == 4 else 0])
            failed += 1
        records.append(record)
    replay = replace(base.replay, failed=failed, completed=base.replay.completed - failed)
    return _rebuilt(base, replace(data, records=tuple(records)), replay=replay)


def _holding(record: RequestRecord, self_bytes: int, cross_bytes: int) -> RequestRecord:
    """`record` holding these KV bytes (what it used stays its real positions)."""
    used = (record.input_tokens + record.output_tokens) * KV_BYTES_PER_POSITION
    return replace(record, kv_cache_bytes=self_bytes + cross_bytes, kv_cache_used_bytes=used,
                   kv_self_attention_bytes=self_bytes, kv_cross_attention_bytes=cross_bytes)


def _static_slot(record: RequestRecord, config_id: str, index: int) -> RequestRecord:
    """Served in a static slot: it holds the whole region, 4 to 8 requests decoding together."""
    return _holding(replace(record, config_id=config_id, batch_size=4.0 + index % 5),
                    SLOT_SELF_POSITIONS * KV_BYTES_PER_POSITION,
                    SLOT_CROSS_POSITIONS * KV_BYTES_PER_POSITION)


def _blocks(tokens: int) -> int:
    return math.ceil(tokens / BLOCK_TOKENS)


def _paged_slot(record: RequestRecord, index: int) -> RequestRecord:
    """Served from the block pool: whole blocks for its real lengths."""
    block_bytes = BLOCK_TOKENS * KV_BYTES_PER_POSITION
    slot = _static_slot(record, "c5", index)
    return _holding(slot, _blocks(record.output_tokens) * block_bytes,
                    _blocks(record.input_tokens) * block_bytes)


def _continuous(base: LiveView) -> LiveView:
    """c4 serves the last 80 requests of `base` in static slots."""
    data = session_at(base.t_s, base.config_id)
    records = list(data.records)
    for index in range(len(records) - 80, len(records)):
        records[index] = _static_slot(records[index], "c4", index)
    configs = {**data.configs, "c4": ConfigEntry("c4", CONTINUOUS, (CONTINUOUS_NOTE,))}
    return _rebuilt(base, replace(data, records=tuple(records),
                                  configs=MappingProxyType(configs)),
                    options=CONTINUOUS, config_id="c4", bucket_edges=(), max_batch=MAX_BATCH,
                    requested_options=ASKED["continuous"])


def _paged(base: LiveView) -> LiveView:
    """c5 (kv_layout=paged) serves the last 40 of c4's requests from a pool with the budget
    of MAX_BATCH static slots; the pool's peak and current use are its requests' blocks times
    the requests decoding with them."""
    data = session_at(base.t_s, base.config_id)
    records = list(data.records)
    for index in range(len(records) - 80, len(records)):
        records[index] = (_static_slot(records[index], "c4", index) if index < len(records) - 40
                          else _paged_slot(records[index], index))
    block_bytes = BLOCK_TOKENS * KV_BYTES_PER_POSITION
    slot_bytes = (SLOT_SELF_POSITIONS + SLOT_CROSS_POSITIONS) * KV_BYTES_PER_POSITION
    held = [round(r.kv_cache_bytes / block_bytes * r.batch_size) for r in records[-40:]]
    pool = KVPool(layout="paged", block_tokens=BLOCK_TOKENS,
                  blocks_total=MAX_BATCH * slot_bytes // block_bytes, blocks_peak=max(held),
                  block_bytes=block_bytes, blocks_used=held[-1], static_slot_bytes=slot_bytes)
    configs = {**data.configs, "c4": ConfigEntry("c4", CONTINUOUS, (CONTINUOUS_NOTE,)),
               "c5": ConfigEntry("c5", PAGED, (CONTINUOUS_NOTE,))}
    return _rebuilt(base, replace(data, records=tuple(records), configs=MappingProxyType(configs),
                                  kv_pools=MappingProxyType({"c5": pool})),
                    options=PAGED, config_id="c5", bucket_edges=(), max_batch=MAX_BATCH,
                    requested_options=ASKED["paged"])


def _tokens(record: RequestRecord) -> tuple[int, ...]:
    rng = random.Random(record.seq)
    return tuple(rng.randrange(32_000) for _ in range(record.output_tokens))


def _drifted(tokens: tuple[int, ...], seq: int) -> tuple[int, ...]:
    """c2's compile changes the arithmetic a little: one sampled request in three takes
    another greedy token near its end, and goes its own way from there."""
    if seq % 3 or len(tokens) < 8:
        return tokens
    at = len(tokens) - 1 - seq % 5
    return tokens[:at] + tuple((t + 1) % 32_000 for t in tokens[at:])


def _measured(base: LiveView) -> LiveView:
    """Drift on every DRIFT_EVERY-th request (tokens kept, references computed), ROOFLINE."""
    data = session_at(base.t_s, base.config_id)
    records, references = [], {}
    for record in data.records:
        if record.seq % DRIFT_EVERY == 0:
            reference = _tokens(record)
            references[record.id] = reference
            served = reference if record.config_id == "c1" else _drifted(reference, record.seq)
            record = replace(record, tokens=served)
        records.append(record)
    return _rebuilt(base, replace(data, records=tuple(records),
                                  references=MappingProxyType(references)),
                    roofline=ROOFLINE)


_STRESSED: dict[str, tuple[str, Callable[[LiveView], LiveView]]] = {
    "overloaded": ("baseline", _overloaded), "failing": ("compiled", _failing),
    "continuous": ("bucketing", _continuous), "paged": ("bucketing", _paged),
    "measured": ("compiled", _measured)}
