"""What a pending toggle waits for, and what `x` (give up the compile) would serve instead.

Options apply between requests (probe/engine/serving.py): a toggle pressed while a request
waits on a compile waits for that compile and that request; under continuous batching, for
the running rows to finish."""

from __future__ import annotations

from probe.analysis.break_even_live import eager_twin
from probe.contract.live import LiveView
from probe.contract.options import OptConfig
from tui.derive import OptionState
from tui.fit_line import Part, part

GIVE_UP_KEY = "x"


def fmt_wait(seconds: float) -> str:
    """ "12 s", "3 min": how long something has waited, in whole units."""
    return f"{int(seconds)} s" if seconds < 90 else f"{int(seconds // 60)} min"


ASKED_SLACK_S = 1.0     # a compile that started this long after the ask started after it


def pending_wait_parts(view: LiveView | None, states: tuple[OptionState, ...],
                       compiling_s: float | None, *, warming_beside: str = "",
                       asked_s: float | None = None) -> tuple[Part, ...] | None:
    """ "bucket→on waits: after chat-00012's compile, 3 min so far — x gives it up" as parts
    that shorten by meaning (tui/fit_line.py, joined with no separator: each carries its own),
    or None when nothing asked for is pending: what waits and the key that ends the wait
    survive, the explanation between them shortens first. `warming_beside`: the serving config
    while the warm switch prewarms the change beside it (the change lands at the cut over, not
    after the serving engine's compiles); `asked_s`: when the change went to the engine (engine
    clock)."""
    pending = [s for s in states if s.status == "pending"]
    if view is None or not pending:
        return None
    asked = " ".join(f"{s.name}→{s.asked}" for s in pending)
    what = part(asked, asked, 9)        # kept whole: cut only when nothing else is left
    compiling = view.compiling
    if warming_beside:     # the ⇄ line below says how the side engine and the serving one are
        return (what, part(f" waits: it lands at the cut over of the warm switch (⇄ below), "
                           f"not after {warming_beside}'s own compiles", " lands at the cut "
                           "over (⇄)", 2),
                part(" — S: cold switch", " · S: cold", 5))
    if compiling is not None:
        who = f"{compiling.request_id}'s" if compiling.request_id else "the prewarm's"
        so_far = "" if compiling_s is None else f", {fmt_wait(compiling_s)} so far"
        started_after = (asked_s is not None and asked_s != float("inf")
                         and compiling.since_s > asked_s + ASKED_SLACK_S)
        serves = fallback_label(view)
        if started_after:       # said once, in words: it is not waiting for this compile
            return (what, part(f" was asked before {who} compile began and has not landed: "
                               f"the engine has not reached a request boundary since",
                               " not landed: no request boundary yet", 2),
                    part(f" — {GIVE_UP_KEY} gives up this compile and serves {serves}",
                         f" · {GIVE_UP_KEY}: serve {serves}", 5))
        short_wait = "" if compiling_s is None else f" {fmt_wait(compiling_s)}"
        return (what, part(f" waits: after {who} compile{so_far}", f" waits{short_wait}", 2),
                part(f" — {GIVE_UP_KEY} gives it up and serves {serves}",
                     f" · {GIVE_UP_KEY}: serve {serves}", 5))
    if view.options_pending and view.options.batching == "continuous":
        return (what, part(" waits: the running rows finish first (continuous batching)",
                           " waits: running rows", 2))
    if view.options_pending:
        return (what, part(" waits: the request being served", " waits: a request", 2))
    return None


def fallback_options(view: LiveView) -> tuple[str | None, OptConfig]:
    """What giving up the running compile serves: a config that needs no compile (issue 49:
    x went back to another compiled config, which compiled again) — the eager config served
    last, else the current one's eager twin (id None: a config not served yet). It is served
    under a new id: a return opens a segment of its own (probe/contract/session.py)."""
    by_id = {e.config_id: e for e in view.configs}
    served = [r.config_id for r in sorted(view.recent, key=lambda r: r.seq, reverse=True)]
    for config_id in served + [s.config_id for s in reversed(view.segments)]:
        entry = by_id.get(config_id)
        if entry is not None and not entry.options.compiled:
            return config_id, entry.options
    return None, eager_twin(view.options)


def fallback_label(view: LiveView) -> str:
    """ "c1's baseline again", or "bucketing=on, eager" """
    config_id, options = fallback_options(view)
    return f"{config_id}'s {options.label()} again" if config_id else f"{options.label()}, eager"
