"""The ranges of every figure infertop reads back from a file, one table: `RANGES` for the
saved kinds (a session's records, compile events, notices, ledger, KV pools, batch steps and
energy, a journal's dispatches), `CONTEXT` for where and how a session ran (its
`environment`, `settings` and `model`: `doctor --verify` serves with them), `TRIAL` for a
`tune.json` trial (`tune --resume`). Every reader checks them the same way: `snapshot
show|compare|export`, `doctor`, `--load`, `snapshot recover`, `tune --resume`. The readers
already refused NaN, infinities and values of the wrong type; these are finite values no run
can have made: a negative or absurd time (1e308 s), a batch of zero rows, a count below zero,
1e9 threads. docs/bad-input.md lists them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from probe.common.argtypes import MAX_MODEL_LENGTH, MAX_THREADS
from probe.common.shown import shown
from probe.contract.figures import ConfigEnergy
from probe.contract.records import (
    BatchSteps,
    CompileEvent,
    GraphBreakRecord,
    KVPool,
    LedgerEntry,
    Notice,
    RequestRecord,
)
from probe.session_store.journal import Dispatch

MAX_SESSION_S = 1e9             # ~31 years of session clock
MAX_MS = MAX_SESSION_S * 1e3
MAX_BATCH = 1e6
MAX_JOULES = 1e12               # a MW for 11 days: no request on one device spends more
MAX_CPUS = 65_536
MAX_RATE = 1e12                 # requests or tokens a second


@dataclass(frozen=True)
class Bound:
    """[low, high] (`above`: low excluded; high None: no upper bound) and what it holds."""
    low: float
    high: float | None
    what: str
    above: bool = False

    def problem(self, value: Any) -> str | None:
        """Why `value` is outside (None when inside, or absent)."""
        if value is None:
            return None
        low_ok = value > self.low if self.above else value >= self.low
        if low_ok and (self.high is None or value <= self.high):
            return None
        if self.high is None:
            return f"expected {self.what} >= {self.low:g}, got {_number(value)}"
        if self.above:
            return (f"expected {self.what} above {self.low:g} and at most {self.high:g}, "
                    f"got {_number(value)}")
        return f"expected {self.what} from {self.low:g} to {self.high:g}, got {_number(value)}"


def _number(value: Any) -> str:
    return str(value) if isinstance(value, int) else f"{value:.6g}"


SECONDS = Bound(0.0, MAX_SESSION_S, "a time in seconds")
MS = Bound(0.0, MAX_MS, "a duration in ms")
US = Bound(0.0, MAX_MS * 1e3, "a duration in µs")
COUNT = Bound(0, None, "a count")
JOULES = Bound(0.0, MAX_JOULES, "joules")
ROWS = Bound(0, MAX_BATCH, "a number of rows", above=True)
SHARE = Bound(0.0, 1.0, "a share")
RATE = Bound(0.0, MAX_RATE, "a rate per second")
RATIO = Bound(0.0, MAX_RATE, "a ratio", above=True)

_RECORD_SECONDS = ("arrival_s", "start_s", "first_token_s", "end_s", "last_token_s")
_RECORD_MS = ("queue_ms", "compile_stall_ms", "encoder_ms", "decoder_ms", "ttft_ms", "tpot_ms",
              "latency_ms", "kv_wait_ms")
# the counts and sizes a record holds: a negative one contradicts what was served
COUNT_FIELDS = ("seq", "input_tokens", "padded_tokens", "output_tokens", "kv_cache_bytes",
                "kv_cache_used_bytes", "kv_self_attention_bytes", "kv_cross_attention_bytes")
_EVENT_SECONDS = ("start_s", "duration_s", "tracing_s", "aot_s", "inductor_s")

# each saved kind's figures (a dotted name reaches into a value the record holds), in the
# order they are checked: the first outside its range is the one named
RANGES: Mapping[type, tuple[tuple[str, Bound], ...]] = {
    RequestRecord: (*((n, SECONDS) for n in _RECORD_SECONDS), *((n, MS) for n in _RECORD_MS),
                    *((n, COUNT) for n in COUNT_FIELDS), ("energy_j", JOULES),
                    ("energy_phases_j.encode", JOULES), ("energy_phases_j.decode", JOULES),
                    ("batch_size", ROWS)),
    CompileEvent: (*((n, SECONDS) for n in _EVENT_SECONDS), ("guard_us", US),
                   ("graphs", COUNT)),
    GraphBreakRecord: (("count", COUNT),),
    Notice: (("t_s", SECONDS),),
    LedgerEntry: (("calls", COUNT), ("median_of", COUNT), ("runtime_ms_total", MS),
                  ("runtime_ms_median", MS), ("compile_s", SECONDS)),
    KVPool: (("block_tokens", COUNT), ("blocks_total", COUNT), ("blocks_peak", COUNT),
             ("block_bytes", COUNT), ("blocks_used", COUNT), ("static_slot_bytes", COUNT)),
    BatchSteps: (("steps", COUNT), ("slots", COUNT), ("running", COUNT), ("rows", COUNT),
                 ("host_ms", MS), ("period_ms", MS), ("join_ms", MS)),
    ConfigEnergy: (("idle_j", JOULES), ("idle_s", SECONDS), ("busy_s", SECONDS)),
    Dispatch: (("seq", COUNT), ("input_tokens", COUNT), ("arrival_s", SECONDS)),
}

# what a session says about where and how it ran, read back by the doctor (`--verify` serves
# with the threads, the backend and the edges), `--load` and `show`: each section's whole
# numbers (a Bound), its names (TEXT) and its lists of whole numbers (a Bound for each); a key
# not named here is kept as saved, and null is an unknown value
TEXT = "a string"
CONTEXT: Mapping[str, Mapping[str, Bound | str | tuple[Bound]]] = {
    "environment": {"torch_threads": Bound(1, MAX_THREADS, "a number of threads"),
                    "cpu_count": Bound(1, MAX_CPUS, "a number of CPUs"),
                    "python": TEXT, "torch": TEXT, "transformers": TEXT, "device": TEXT,
                    "device_name": TEXT, "platform": TEXT},
    "settings": {"bucket_edges": (Bound(1, MAX_MODEL_LENGTH, "a bucket edge"),),
                 "max_new_tokens": Bound(1, MAX_MODEL_LENGTH, "a number of tokens"),
                 "max_batch": Bound(0, MAX_BATCH, "a number of rows"),
                 "kv_block_tokens": Bound(1, MAX_MODEL_LENGTH, "a number of positions"),
                 "kv_budget_bytes": COUNT, "repeats": COUNT,
                 "compile_backend": TEXT, "bucket_source": TEXT},
    "model": {"name": TEXT, "source": TEXT, "dtype": TEXT, "parameters": COUNT},
}


# a tune.json trial's figures (probe/tune/trials.py reads them with these)
TRIAL: Mapping[str, Bound] = {
    "number": COUNT, "goodput_rps": RATE, "p95_ms": MS, "tokens_per_s": RATE,
    "slo_attainment": SHARE, "drift": SHARE, "kv_peak_bytes": COUNT, "compile_s": SECONDS,
    "latency_p50_ms": MS, "j_per_good_token": JOULES}
TRIAL_RATIO = RATIO                 # each of vs_control's and vs_default's ratios and bounds
TRIAL_CONSTRAINT = Bound(0.0, MAX_RATE, "a bound")     # a constraint's bound and value


def _field(item: object, name: str) -> Any:
    for part in name.split("."):
        item = getattr(item, part, None)
    return item


def problem_of(item: object) -> str | None:
    """`field: what is wrong` for the first figure of a saved record of any kind out of its
    range (None when all are in, or for a kind without ranges)."""
    for name, bound in RANGES.get(type(item), ()):
        problem = bound.problem(_field(item, name))
        if problem is not None:
            return f"{name}: {problem}"
    if isinstance(item, LedgerEntry) and item.median_of > item.calls:
        return f"median_of: expected at most calls ({item.calls}), got {item.median_of}"
    if isinstance(item, KVPool) and item.blocks_peak > item.blocks_total:
        return (f"blocks_peak: expected at most blocks_total ({item.blocks_total}), "
                f"got {item.blocks_peak}")
    if isinstance(item, BatchSteps):
        for index, size in enumerate(item.captured):
            problem = COUNT.problem(size)
            if problem is not None:
                return f"captured[{index}]: {problem}"
    return None


def context_problem(section: str, values: Mapping[str, Any]) -> str | None:
    """`field: what is wrong` for the first value of a session's `section` (environment,
    settings, model: CONTEXT) of the wrong type or out of its range; None when all are in."""
    for name, kind in CONTEXT.get(section, {}).items():
        value = values.get(name)
        if value is None:
            continue
        if kind == TEXT:
            if type(value) is not str:
                return f"{name}: expected a string, got {shown(value)}"
            continue
        if isinstance(kind, tuple):
            if type(value) is not list:
                return f"{name}: expected a list of whole numbers, got {shown(value)}"
            for index, item in enumerate(value):
                problem = _whole_problem(item, kind[0])
                if problem is not None:
                    return f"{name}[{index}]: {problem}"
            continue
        assert isinstance(kind, Bound)
        problem = _whole_problem(value, kind)
        if problem is not None:
            return f"{name}: {problem}"
    return None


def _whole_problem(value: Any, bound: Bound) -> str | None:
    if type(value) is not int:
        high = "" if bound.high is None else f" to {bound.high:g}"
        return f"expected a whole number from {bound.low:g}{high}, got {shown(value)}"
    return bound.problem(value)
