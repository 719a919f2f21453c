"""Small views of a LiveView that panels share: pure functions, tested on their own.

Figures (percentiles, segments, headroom) are computed in probe.contract.live/probe.analysis.stats; this module
only selects and pairs them for display.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

from probe.analysis.batch_roofline import live_roofline_ms
from probe.analysis.break_even_live import eager_twin
from probe.analysis.config_changes import config_changes  # noqa: F401 (the panels call derive.)
from probe.checks.engine_inputs import PRESETS
from probe.contract.figures import SegmentStats
from probe.contract.live import LiveView
from probe.contract.options import CHOICES, OptConfig
from probe.contract.records import KVPool, RequestRecord


@dataclass(frozen=True)
class KVHeld:
    requests: int
    allocated_bytes: int        # summed over those requests
    used_bytes: int


def previous_config_id(view: LiveView) -> str | None:
    """The config served before the current one: the last other config among recent
    requests, else the segment listed before the current one."""
    for record in sorted(view.recent, key=lambda r: r.seq, reverse=True):
        if record.config_id != view.config_id:
            return record.config_id
    ids = [s.config_id for s in view.segments]
    if view.config_id in ids:
        index = ids.index(view.config_id)
        return ids[index - 1] if index > 0 else None
    return ids[-1] if ids else None


def segment(view: LiveView, config_id: str | None) -> SegmentStats | None:
    return next((s for s in view.segments if s.config_id == config_id), None)


def config_label(view: LiveView, config_id: str | None) -> str:
    for entry in view.configs:
        if entry.config_id == config_id:
            return entry.options.label()
    return view.options.label() if config_id == view.config_id else "?"


def kv_held(view: LiveView) -> KVHeld:
    """Allocated vs filled KV-cache bytes over the recent requests of the current config."""
    ok = [r for r in view.recent if r.ok and r.config_id == view.config_id]
    return KVHeld(len(ok), sum(r.kv_cache_bytes for r in ok),
                  sum(r.kv_cache_used_bytes for r in ok))


@dataclass(frozen=True)
class KVBudget:
    """What the current config's paged pool budget holds under each layout."""
    pool: KVPool
    static_requests: int | None     # budget // one static slot
    paged_requests: int | None      # budget // the mean bytes a served request held (recent)


def kv_budget(view: LiveView) -> KVBudget | None:
    """For a config with a paged pool: how many requests its KV budget holds as static slots
    and as blocks, for the traffic seen so far. None without a pool."""
    current = segment(view, view.config_id)
    pool = current.kv_pool if current is not None else None
    if pool is None:
        return None
    held = kv_held(view)
    mean_held = held.allocated_bytes // held.requests if held.requests else 0
    return KVBudget(pool,
                    pool.budget_bytes // pool.static_slot_bytes if pool.static_slot_bytes else None,
                    pool.budget_bytes // mean_held if mean_held else None)


def roofline_ratio(view: LiveView) -> tuple[float | None, float | None]:
    """(the current config's TPOT p50, that over this machine's roofline for the config's
    precision): the config's own requests, as the roofline is its precision's; a batched
    config's against the batch's roofline (probe.analysis.batch_roofline). The live view's
    `tpot` (probe.analysis.tpot_figure, the doctor's too) when it has one."""
    if (view.tpot is not None and view.tpot.config_id == view.config_id
            and (view.tpot.limit_ms is not None or view.roofline is None)):
        return view.tpot.tpot_ms, view.tpot.ratio
    current = segment(view, view.config_id)
    tpot_ms = current.tpot_ms.p50 if current is not None else None
    if view.roofline is None or tpot_ms is None:
        return tpot_ms, None
    limit_ms, _ = roofline_limit(view)
    return tpot_ms, tpot_ms / limit_ms if limit_ms else None


def roofline_limit(view: LiveView) -> tuple[float | None, float]:
    """(the roofline the current config's TPOT is held against, its mean rows per step)."""
    if view.roofline is None:
        return None, 1.0
    if (view.tpot is not None and view.tpot.limit_ms is not None
            and view.tpot.config_id == view.config_id):
        return view.tpot.limit_ms, view.tpot.rows
    mine = [r for r in view.recent if r.config_id == view.config_id]
    return live_roofline_ms(view.roofline, mine)


def engine_now_s(view: LiveView, since_arrival_s: float) -> float:
    """The engine's session clock now: its clock when it built the live view plus the local time
    since the live view arrived (the engine publishes rarely while it compiles)."""
    return view.t_s + max(since_arrival_s, 0.0)


def compile_function(compile_id: str, function: str | None) -> str:
    """What a compile compiles: the function when dynamo named it, else its frame ("0/3" →
    "frame 0")."""
    return function if function else f"frame {compile_id.split('/', 1)[0]}"


@dataclass(frozen=True)
class OptionState:
    name: str
    served: str                 # what the engine serves now
    asked: str                  # what the dashboard asked for
    status: str                 # "served" | "pending" (not applied yet) | "changed" (by the engine)
    reason: str | None = None   # why the engine changed it


def options_applied(asked: OptConfig, view: LiveView | None,
                    asked_since_start: bool) -> bool:
    """Whether the engine has received the options asked for and applied them. It says which
    options it last received (`requested_options`; None: none since it started, with the
    options the dashboard started it with) and whether they wait to be applied."""
    if view is None:
        return False
    if view.requested_options is None:
        received = not asked_since_start
    else:
        received = view.requested_options == asked
    return received and not view.options_pending


def config_notes(view: LiveView, config_id: str) -> tuple[str, ...]:
    return next((e.notes for e in view.configs if e.config_id == config_id), ())


def note_naming(option: str, notes: tuple[str, ...]) -> str | None:
    """The engine's note on an option it set itself: one that says the value it set
    ("…: decode=fullgraph", "…; quant stays off"), else one about the option ("freezing is an
    inductor option: …")."""
    for pattern in (rf"\b{option}(=| stays )", rf"^{option}\b"):
        found = next((note for note in notes if re.search(pattern, note)), None)
        if found is not None:
            return found
    return None


def option_states(asked: OptConfig, view: LiveView | None,
                  asked_since_start: bool) -> tuple[OptionState, ...]:
    """Each option as served, compared with what was asked. A difference is pending while the
    engine has not received the options asked for or has not applied them yet
    (options_applied); once it has, the engine chose otherwise, and its config's notes say
    why. `asked_since_start`: the dashboard has asked for options since the engine started."""
    now = view.options if view is not None else asked
    notes = config_notes(view, view.config_id) if view is not None else ()
    applied = options_applied(asked, view, asked_since_start)
    states = []
    for name in CHOICES:
        value, wanted = getattr(now, name), getattr(asked, name)
        if value == wanted:
            states.append(OptionState(name, value, wanted, "served"))
        elif not applied:
            states.append(OptionState(name, value, wanted, "pending"))
        else:
            states.append(OptionState(name, value, wanted, "changed", note_naming(name, notes)))
    return tuple(states)


@dataclass(frozen=True)
class Failures:
    failed: int                          # over the session
    latest: RequestRecord | None         # the last failed request among the recent ones
    by_kind: tuple[tuple[str, int], ...]  # exception type → count, recent requests, most first
    recent_failed: int                   # failed requests among the recent ones


def error_kind(error: str) -> str:
    """The exception type an error message starts with ("OutOfMemoryError: CUDA out of…")."""
    kind = error.split(":", 1)[0].strip()
    return kind or "error"


def failures(view: LiveView) -> Failures:
    failed = [r for r in view.recent if not r.ok]
    kinds = Counter(error_kind(r.error or "") for r in failed)
    return Failures(view.replay.failed, failed[-1] if failed else None,
                    tuple(kinds.most_common()), len(failed))


def random_weights(view: LiveView) -> bool:
    """The model is a preset built with random weights (its drift overstates a trained one's)."""
    return view.model in PRESETS


@dataclass(frozen=True)
class CompileCost:
    """Whether the served config's compile time is repaid, as the dashboard can tell it."""
    status: str     # "eager" | "repaid" | "never" | "measuring" | "no twin"
    compiled_config: str = ""
    eager_config: str = ""
    requests: int | None = None      # "repaid": requests that repay the compile
    twin: OptConfig | None = None    # "no twin": the eager options to serve


def compile_cost(view: LiveView) -> CompileCost:
    """The engine's break-even for the served config (probe.analysis.stats.break_even), and when it has
    none, why: an eager config, too few requests yet, or no eager twin served to compare."""
    found = view.break_even
    if found is not None:
        if found.requests is None or math.isinf(found.requests):
            status = "measuring" if found.requests is None else "never"
            return CompileCost(status, found.compiled_config, found.eager_config)
        return CompileCost("repaid", found.compiled_config, found.eager_config,
                           max(math.ceil(found.requests), 1))
    if not view.options.compiled:
        return CompileCost("eager")
    twin = eager_twin(view.options)
    twin_id = next((e.config_id for e in view.configs if e.options == twin), None)
    if twin_id is None:
        return CompileCost("no twin", view.config_id, twin=twin)
    return CompileCost("measuring", view.config_id, twin_id)
