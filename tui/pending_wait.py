"""What a pending toggle waits for, and what `x` (give up the compile) would serve instead.

Options apply between requests (probe/engine/serving.py): a toggle pressed while a request
waits on a compile waits for that compile and that request; under continuous batching, for
the running rows to finish."""

from __future__ import annotations

from probe.contract.break_even_live import eager_twin
from probe.contract.live import LiveView
from probe.contract.options import OptConfig
from tui import derive
from tui.derive import OptionState

GIVE_UP_KEY = "x"


def fmt_wait(seconds: float) -> str:
    """ "12 s", "3 min": how long something has waited, in whole units."""
    return f"{int(seconds)} s" if seconds < 90 else f"{int(seconds // 60)} min"


def pending_wait(view: LiveView | None, states: tuple[OptionState, ...],
                 compiling_s: float | None) -> str | None:
    """ "bucket→on waits: after chat-00012's compile, 3 min so far — x gives it up", or None
    when nothing asked for is pending."""
    pending = [s for s in states if s.status == "pending"]
    if view is None or not pending:
        return None
    what = " ".join(f"{s.name}→{s.asked}" for s in pending)
    compiling = view.compiling
    if compiling is not None:
        who = f"{compiling.request_id}'s" if compiling.request_id else "the prewarm's"
        so_far = "" if compiling_s is None else f", {fmt_wait(compiling_s)} so far"
        return (f"{what} waits: after {who} compile{so_far} — "
                f"{GIVE_UP_KEY} gives it up and serves {fallback_label(view)}")
    if view.options_pending and view.options.batching == "continuous":
        return f"{what} waits: the running rows finish first (continuous batching)"
    if view.options_pending:
        return f"{what} waits: the request being served"
    return None


def fallback_options(view: LiveView) -> tuple[str | None, OptConfig]:
    """What giving up the running compile serves: the config served before the current one,
    else the current one's eager twin (id None: a config not served yet)."""
    previous = derive.previous_config_id(view)
    entry = next((e for e in view.configs if e.config_id == previous), None)
    if entry is not None and previous != view.config_id:
        return previous, entry.options
    return None, eager_twin(view.options)


def fallback_label(view: LiveView) -> str:
    config_id, options = fallback_options(view)
    return f"{config_id} ({options.label()})" if config_id else options.label()
