"""The raw records the engine keeps. Every figure infertop shows is computed from these.

All `*_s` times are seconds on the session clock (time.perf_counter() minus the session start),
so records from one session line up on one axis; `*_ms` are durations.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EnergyPhases:
    """A request's joules by phase: its share of the encode step it joined and of each decode
    step it ran in (probe/analysis/energy.py)."""
    encode: float
    decode: float


@dataclass(frozen=True)
class RequestRecord:
    id: str
    seq: int
    config_id: str
    input_tokens: int           # the request's real length
    padded_tokens: int          # the length the encoder ran on (bucket edge, or batch width)
    output_tokens: int          # tokens generated (0 when it failed)
    arrival_s: float            # scheduled arrival: queue wait starts here
    start_s: float              # the engine began work on it
    first_token_s: float | None
    end_s: float                # the engine handed the result back (a batch: when it ended)
    queue_ms: float
    compile_stall_ms: float     # time inside torch.compile while this request waited
    encoder_ms: float
    decoder_ms: float
    ttft_ms: float | None       # arrival -> first generated token
    tpot_ms: float | None       # (last_token_s − first_token_s) / (output_tokens − 1)
    latency_ms: float           # arrival -> end
    kv_cache_bytes: int         # nbytes of the cache tensors it held
    kv_cache_used_bytes: int    # bytes of the positions actually filled
    kv_self_attention_bytes: int
    kv_cross_attention_bytes: int
    batch_size: float = 1      # rows decoded together (continuous: mean over its steps)
    error: str | None = None
    last_token_s: float | None = None   # its own last token (in a batch, before the batch ends)
    tokens: tuple[int, ...] | None = None   # generated ids, kept only when asked (--tokens)
    kv_wait_ms: float = 0.0     # of queue_ms: taken from the queue, waiting for KV blocks (paged)
    # its share of the device's energy counter over the steps it ran in; None where no
    # counter was read (no counter here, or a session saved before energy was read)
    energy_j: float | None = None
    energy_phases_j: EnergyPhases | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


COMPILING = ("compile", "recompile")     # the event kinds that are compiles (their seconds count)
ABANDONED = "abandoned"     # a compile given up with x: requests waited on it, no config counts it
WAITED_ON = COMPILING + (ABANDONED,)     # the kinds whose running time requests wait on
# The generic fallback kind (probe/analysis/fallbacks.py): the engine took a fallback that is no
# compile of its own — a calibration at its floor, a CUDA graph skipped — said in the feed, the
# session and the replay's summary; `function` names what fell back, `reason` says it whole.
DEGRADED = "degraded"


@dataclass(frozen=True)
class CompileEvent:
    compile_id: str             # dynamo's "frame/attempt", e.g. "0/3"
    kind: str                   # "compile" | "recompile" | "fallback" | "limit" | ABANDONED |
                                # DEGRADED
    function: str               # the code object compiled, e.g. "decode_step"
    start_s: float
    duration_s: float | None    # None while it still runs
    reason: str | None          # guard failures of a recompile, or why it fell back
    request_id: str | None      # the request that waited on it (None: prewarm)
    config_id: str | None
    graphs: int = 0             # graphs dynamo produced in it (its counters["stats"]["unique_graphs"])
    # dynamo's own time to check the compiled code's guards once, as it measured right after
    # compiling (CompilationMetrics.guard_latency_us): the check every later call pays first
    guard_us: float | None = None
    # Where the compile's seconds went, as dynamo split them (CompilationMetrics): tracing is
    # dynamo reading the bytecode into a graph with its guards; aot is AOTAutograd
    # (functionalization, decompositions); inductor is lowering, code generation and the
    # C++/Triton compile. They add up to dynamo's own duration of the compile, about `duration_s`.
    tracing_s: float | None = None
    aot_s: float | None = None
    inductor_s: float | None = None
    # every graph of it came from inductor's on-disk caches (AOTAutograd's cache hit): inductor
    # did not run, and aot_s is the time to load them
    from_cache: bool | None = None
    # a warm switch's (or a live A/B's arm B's) side compile: the config that served meanwhile.
    # Nobody waited on it (steady_state leaves it out of the cold chain); its config paid it
    # all the same, and the serving one was slowed (probe/analysis/side_compile_cost.py)
    beside: str | None = None


@dataclass(frozen=True)
class CompileInProgress:
    """A compile dynamo has started and not finished: what the dashboard shows while it runs."""
    compile_id: str
    function: str | None        # known for a recompile, or from an earlier compile of the frame
    request_id: str | None      # the request waiting on it
    since_s: float              # session clock when it started
    waited_before_s: float      # earlier compiles the same request already waited on
    stage: str | None = None    # "tracing" | "aot" | "inductor" | "kernel compile", read live

    def stall_s(self, now_s: float) -> float:
        """The waiting request's compile stall so far: it only grows while the request waits."""
        return self.waited_before_s + max(now_s - self.since_s, 0.0)


@dataclass(frozen=True)
class GraphBreakRecord:
    config_id: str
    reason: str
    location: str               # user code file:line
    count: int


@dataclass(frozen=True)
class KVPool:
    """A paged KV cache's pool, as one config used it."""
    layout: str
    block_tokens: int           # positions per block
    blocks_total: int
    blocks_peak: int            # the most blocks held at once
    block_bytes: int            # one block: K and V, every decoder layer
    blocks_used: int = 0        # held now (when the snapshot was taken)
    static_slot_bytes: int = 0  # what one static-layout slot holds at the same settings

    @property
    def budget_bytes(self) -> int:
        return self.blocks_total * self.block_bytes


HOST_BOUND = 0.8       # the host's share of a batching step from which the loop is host-bound


@dataclass(frozen=True)
class BatchSteps:
    """Continuous batching's recent steps, as one config ran them: host time against the
    step period read from the GPU's marks. A host time near the period is a host-bound loop
    (the GPU waits for the host); well below it, the GPU is the bound.

    Means over the window, not medians: joins come every few steps, and a median step would
    leave their host work out of the loop's (on an H200 it was most of it). A step during
    which a compile ran is left out: its compile is the compile feed's to show."""
    steps: int                      # steps so far
    slots: int                      # slots available
    captured: tuple[int, ...]       # batch sizes with a CUDA graph; () when none
    running: float | None           # requests in slots, mean over the window
    rows: float | None              # rows a step ran over (its captured size, or every slot)
    host_ms: float | None           # the host's work a step, joins included (not its waits)
    period_ms: float | None         # between consecutive steps' ends on the GPU
    on_gpu: bool = True             # on a CPU the step is the host's own work: no bound to read
    join_ms: float | None = None    # of host_ms, the joins' (their encoder run) a step

    @property
    def host_share(self) -> float | None:
        """The host's share of a step's period: near 1, the loop is host-bound."""
        if self.host_ms is None or not self.period_ms:
            return None
        return min(1.0, self.host_ms / self.period_ms)

    def _slots_text(self) -> str:
        """"slots 6/8": the requests in slots (mean over the window) of the slots there are."""
        return f"slots {'—' if self.running is None else f'{self.running:.0f}'}/{self.slots}"

    @property
    def bound(self) -> str | None:
        """"host" when the host's work fills HOST_BOUND of the period or more (the GPU waits
        for the next step to be queued), "GPU" when it fills half or less, else "both"."""
        share = self.host_share
        if share is None or not self.on_gpu:
            return None
        return "host" if share >= HOST_BOUND else "GPU" if share <= 0.5 else "both"

    def short_text(self) -> str:
        """The narrow panel's: "slots 6/8 · host 0.96/1.20 ms · host-bound" (the host's time
        of the step's period)."""
        if self.host_ms is None or self.period_ms is None:
            return self._slots_text()
        if not self.on_gpu:
            return f"{self._slots_text()} · {self.period_ms:.2f} ms a step"
        return (f"{self._slots_text()} · host {self.host_ms:.2f}/{self.period_ms:.2f} ms · "
                f"{self.bound}-bound")

    @property
    def joins_lead(self) -> bool:
        """Whether the joins are most of the host's work a step."""
        return bool(self.join_ms and self.host_ms and self.join_ms * 2 > self.host_ms)

    def text(self) -> str:
        """One line for the panels and the doctor: slots in use, the captured sizes, host
        time against the step period."""
        graphs = (f" · graphs {self.captured[0]}…{self.captured[-1]}" if self.captured
                  else " · no CUDA graphs")
        joins = f" (joins {self.join_ms:.2f})" if self.join_ms else ""
        times = ("" if self.host_ms is None or self.period_ms is None
                 else f" · {self.period_ms:.2f} ms a step" if not self.on_gpu else
                 f" · host {self.host_ms:.2f} ms{joins} of a {self.period_ms:.2f} ms step"
                 f" ({self.bound}-bound)")
        return f"{self._slots_text()}{graphs}{times}"


@dataclass(frozen=True)
class LedgerEntry:
    """What one compiled graph of a config earned: the graph is the function called and the
    shapes and dtypes of its tensor arguments (`key`), which pick the graph dynamo runs.
    An eager config's entries are kept too: they are the per-call times pay-back needs."""
    config_id: str
    function: str                   # the callable's name: encode, prefill_step, decode_step, …
    key: str                        # "(1, 1) int64 · (1, 69, 64) float32 · …", argument order
    calls: int
    runtime_ms_total: float         # Σ per-call wall time (CPU) or CUDA event time (GPU)
    runtime_ms_median: float | None     # of `median_of` calls; None before a call was timed
    compile_s: float                # Σ the CompileEvents that started inside its calls
    stalled_requests: tuple[str, ...] = ()  # requests served by a call that compiled
    paid_back: bool | None = None   # calls × (eager − compiled) ≥ compile_s; None: no eager twin
    median_of: int = 0              # per-call times the median is of (< calls: a sample)


@dataclass(frozen=True)
class RooflineStatus:
    """This machine's memory roofline for the config being served: the fastest a batch-1 step
    can be when it reads every weight once at the measured bandwidth."""
    precision: str
    step_bytes: int             # weights one cached decode step reads
    bandwidth_gb_s: float       # matrix-vector read bandwidth, measured on this machine
    measured_unix: float        # when (the measurement is cached per machine)
    roofline_ms: float          # step_bytes / bandwidth
    kv_bytes_per_position: int = 0      # K and V of one position, every decoder layer
    from_earlier_run: bool = False      # the bandwidth was measured before this engine started
    lever_note: str | None = None       # what this CPU lacks for the served precision/quant

    def ratio(self, tpot_ms: float | None) -> float | None:
        """Measured time per output token over the roofline (1.0 = at the hardware limit)."""
        return None if tpot_ms is None else tpot_ms / self.roofline_ms


@dataclass(frozen=True)
class BreakEven:
    """How many requests of this traffic repay a config's compile time."""
    compiled_config: str
    eager_config: str
    compile_s: float
    saved_ms_per_request: float     # eager − compiled, at this traffic's mean output length
    requests: float | None          # compile_s / saving; inf: never (not faster); None: unknown


@dataclass(frozen=True)
class Notice:
    """Something the user must be told: an option that could not apply, a fallback, a fault."""
    t_s: float
    level: str                  # "info" | "warning" | "error"
    text: str
