"""KV cache: bytes now and peak, self- vs cross-attention, allocated vs filled (the waste of
static or padded caches), and how many more requests at the current p95 fit in free memory."""

from __future__ import annotations

from rich.text import Text

from probe.live import LiveSnapshot
from tui import derive
from tui.format import NO_DATA, fmt_bytes, fmt_count, fmt_fraction
from tui.widgets.panel import Panel, Parts


def kv_headline(snapshot: LiveSnapshot) -> Text:
    fit = snapshot.kv.headroom_requests
    unit = "slots" if snapshot.batch.mode == "continuous" else "req"
    room = NO_DATA if fit is None else f"≈{fmt_count(fit)} {unit} fit"
    return Text(f"peak {fmt_bytes(snapshot.kv.peak_bytes)} · {room}")


def kv_detail(snapshot: LiveSnapshot) -> Text:
    kv = snapshot.kv
    waste = derive.kv_waste(snapshot)
    text = Text()
    text.append(f"now {fmt_bytes(kv.now_bytes)} (used {fmt_bytes(kv.now_used_bytes)})\n")
    text.append(f"self {fmt_bytes(kv.self_attention_bytes)} · cross "
                f"{fmt_bytes(kv.cross_attention_bytes)}\n")
    if waste.requests:
        per_request = waste.requests
        text.append(f"alloc {fmt_bytes(waste.allocated_bytes // per_request)} · used "
                    f"{fmt_bytes(waste.used_bytes // per_request)}\n")
        text.append(f"waste {fmt_bytes(waste.waste_bytes // per_request)} per request "
                    f"({fmt_fraction(waste.waste_fraction)})\n",
                    style="bold yellow" if (waste.waste_fraction or 0) > 0.25 else "")
    else:
        text.append(f"alloc vs used: no request\nin {snapshot.config_id} yet\n", style="dim")
    per = "per slot" if snapshot.batch.mode == "continuous" else "p95"
    text.append(f"fit: {per} {fmt_bytes(kv.per_request_p95_bytes, NO_DATA)} in "
                f"{fmt_bytes(kv.free_device_bytes)} free", style="dim")
    return text


class KVCachePanel(Panel):
    TITLE = "KV cache"

    def render_key(self, snapshot: LiveSnapshot) -> object:
        last = snapshot.recent[-1].seq if snapshot.recent else None
        return snapshot.kv, snapshot.config_id, last, snapshot.batch.mode

    def render_parts(self, snapshot: LiveSnapshot, width: int) -> Parts:
        return Parts(kv_headline(snapshot), kv_detail(snapshot))
