"""KV cache: what the latest request held and filled, the peak held, self- vs cross-attention,
held vs used per request of the current config (the waste of static or padded caches), and the
headroom: how many more requests at the per-request p95 fit in free memory.

"held" is what the cache tensors allocate (kv_cache_bytes), "used" the positions really
filled (kv_cache_used_bytes): every figure says which, and whose."""

from __future__ import annotations

from rich.text import Text

from probe.live import LiveSnapshot
from tui import derive
from tui.format import NO_DATA, fitting, fmt_bytes, fmt_count, fmt_fraction
from tui.widgets.panel import Panel, Parts


def _unit(snapshot: LiveSnapshot) -> tuple[str, str]:
    """(what fits in the headroom, what the p95 is per)."""
    if snapshot.batch.mode == "continuous":
        return "slots", "per-slot"
    return "req", "per-request"


def kv_headline(snapshot: LiveSnapshot, width: int = 80) -> Text:
    fit = snapshot.kv.headroom_requests
    unit, _ = _unit(snapshot)
    peak = f"peak held {fmt_bytes(snapshot.kv.peak_bytes)}"
    if fit is None:
        return Text(f"{peak} · headroom {NO_DATA}", no_wrap=True, overflow="ellipsis")
    return Text(fitting(width, f"{peak} · headroom ≈{fmt_count(fit)} {unit}",
                        f"{peak}, ≈{fmt_count(fit)} fit"), no_wrap=True, overflow="ellipsis")


def kv_detail(snapshot: LiveSnapshot) -> Text:
    kv = snapshot.kv
    waste = derive.kv_waste(snapshot)
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(f"latest request held {fmt_bytes(kv.now_bytes)} · used "
                f"{fmt_bytes(kv.now_used_bytes)}\n")
    text.append(f"  self-attention {fmt_bytes(kv.self_attention_bytes)} · cross "
                f"{fmt_bytes(kv.cross_attention_bytes)}\n")
    if waste.requests:
        per_request = waste.requests
        text.append(f"{snapshot.config_id} mean request held "
                    f"{fmt_bytes(waste.allocated_bytes // per_request)} · used "
                    f"{fmt_bytes(waste.used_bytes // per_request)}\n")
        text.append(f"  waste {fmt_bytes(waste.waste_bytes // per_request)} per request "
                    f"({fmt_fraction(waste.waste_fraction)})\n",
                    style="bold yellow" if (waste.waste_fraction or 0) > 0.25 else "")
    else:
        text.append(f"{snapshot.config_id} mean request held vs used:\n  no request in "
                    f"{snapshot.config_id} yet\n", style="dim")
    _, per = _unit(snapshot)
    text.append(f"{per} p95 held {fmt_bytes(kv.per_request_p95_bytes, NO_DATA)} · free "
                f"{fmt_bytes(kv.free_device_bytes)}", style="dim")
    return text


class KVCachePanel(Panel):
    TITLE = "KV cache"

    def render_key(self, snapshot: LiveSnapshot) -> object:
        last = snapshot.recent[-1].seq if snapshot.recent else None
        return snapshot.kv, snapshot.config_id, last, snapshot.batch.mode

    def render_parts(self, snapshot: LiveSnapshot, width: int) -> Parts:
        return Parts(kv_headline(snapshot, width), kv_detail(snapshot))
