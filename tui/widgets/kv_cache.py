"""KV cache: what the latest request held and filled, the peak held, self- vs cross-attention,
held vs used per request of the current config and the share of what it held that was never
filled (kv_waste_pct, the waste of static, padded or block-rounded caches), and the headroom:
how many more requests at the per-request p95 fit in free memory. For the paged layout: the
pool's blocks held, free and at peak, and how many requests its budget holds as static slots
and as blocks for the traffic seen so far.

"held" is what the cache tensors allocate (kv_cache_bytes), "used" the positions really
filled (kv_cache_used_bytes): every figure says which, and whose."""

from __future__ import annotations

from rich.text import Text

from probe.common.units import NO_DATA, fmt_bytes, fmt_count, fmt_pct
from probe.contract.live import LiveView
from tui import derive
from tui.format import fitting
from tui.widgets.panel import Panel, Parts

WASTE_WARNING_PCT = 25.0


def _unit(view: LiveView) -> tuple[str, str]:
    """(what fits in the headroom, what the p95 is per)."""
    if view.batch.mode == "continuous":
        return "slots", "per-slot"
    return "req", "per-request"


def kv_headline(view: LiveView, width: int = 80) -> Text:
    fit = view.kv.headroom_requests
    unit, _ = _unit(view)
    peak = f"peak held {fmt_bytes(view.kv.peak_bytes)}"
    budget = derive.kv_budget(view)
    short = [] if budget is None else [pool_brief(view, budget)]
    if fit is None:
        return Text(fitting(width, f"{peak} · headroom {NO_DATA}", *short),
                    no_wrap=True, overflow="ellipsis")
    return Text(fitting(width, f"{peak} · headroom ≈{fmt_count(fit)} {unit}",
                        *short, f"{peak}, ≈{fmt_count(fit)} fit"),
                no_wrap=True, overflow="ellipsis")


def pool_brief(view: LiveView, budget: derive.KVBudget) -> str:
    """The pool in a few words, for a narrow panel: "88/384 blocks · waste 10%"."""
    return (f"{budget.pool.blocks_used}/{budget.pool.blocks_total} blocks · waste "
            f"{fmt_pct(waste_pct(view), NO_DATA)}")


def waste_pct(view: LiveView) -> float | None:
    current = derive.segment(view, view.config_id)
    return current.kv_waste_pct if current is not None else None


def waste_line(view: LiveView) -> Text:
    waste = waste_pct(view)
    return Text(f"  waste {fmt_pct(waste, NO_DATA)} of what {view.config_id} held, never "
                "filled\n", style="bold yellow" if (waste or 0) > WASTE_WARNING_PCT else "")


def mean_request_lines(view: LiveView) -> Text:
    held = derive.kv_held(view)
    text = Text()
    if held.requests:
        text.append(f"{view.config_id} mean request held "
                    f"{fmt_bytes(held.allocated_bytes // held.requests)} · used "
                    f"{fmt_bytes(held.used_bytes // held.requests)}\n")
        text.append_text(waste_line(view))
    else:
        text.append(f"{view.config_id} mean request held vs used:\n  no request in "
                    f"{view.config_id} yet\n", style="dim")
    return text


def pool_lines(budget: derive.KVBudget) -> Text:
    pool = budget.pool
    text = Text(f"pool {fmt_count(pool.blocks_used)}/{fmt_count(pool.blocks_total)} blocks held"
                f" · {fmt_count(pool.blocks_total - pool.blocks_used)} free · peak "
                f"{fmt_count(pool.blocks_peak)}\n")
    text.append(f"  {fmt_bytes(pool.budget_bytes)} holds static "
                f"{fmt_count(budget.static_requests)} · paged "
                f"≈{fmt_count(budget.paged_requests)} req\n")
    return text


def kv_detail(view: LiveView) -> Text:
    kv = view.kv
    text = Text(no_wrap=True, overflow="ellipsis")
    budget = derive.kv_budget(view)
    if budget is not None:
        text.append_text(pool_lines(budget))
        text.append_text(mean_request_lines(view))
    text.append(f"latest request held {fmt_bytes(kv.now_bytes)} · used "
                f"{fmt_bytes(kv.now_used_bytes)}\n")
    if budget is not None:
        return text
    text.append(f"  self-attention {fmt_bytes(kv.self_attention_bytes)} · cross "
                f"{fmt_bytes(kv.cross_attention_bytes)}\n")
    text.append_text(mean_request_lines(view))
    _, per = _unit(view)
    text.append(f"{per} p95 held {fmt_bytes(kv.per_request_p95_bytes, NO_DATA)} · free "
                f"{fmt_bytes(kv.free_device_bytes)}", style="dim")
    return text


class KVCachePanel(Panel):
    TITLE = "KV cache"

    def render_key(self, view: LiveView) -> object:
        last = view.recent[-1].seq if view.recent else None
        return (view.kv, view.config_id, last, view.batch.mode,
                derive.segment(view, view.config_id))

    def render_parts(self, view: LiveView, width: int) -> Parts:
        return Parts(kv_headline(view, width), kv_detail(view))
