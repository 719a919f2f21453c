"""The roofline of a batched decode step: the weights read once per step plus each row's KV
(bench E7's definition, used live too)."""

from __future__ import annotations

from typing import Sequence

from probe.analysis.stats import summarize
from probe.contract.figures import BATCHED
from probe.contract.records import RequestRecord, RooflineStatus


def kv_bytes_per_row_step(record: RequestRecord, kv_bytes_per_position: int) -> float:
    """A row reads its filled positions each step: the encoder's c and its own t, for
    t = 1..n, so c + (n + 1) / 2 on average; used bytes hold c + n positions."""
    n = record.output_tokens
    return record.kv_cache_used_bytes - kv_bytes_per_position * (n - 1) / 2


def batch_step_ms(weight_bytes: int, kv_bytes_per_position: int, bandwidth_gb_s: float,
                  records: Sequence[RequestRecord], rows: float) -> float | None:
    kv = summarize(kv_bytes_per_row_step(r, kv_bytes_per_position) for r in records if r.ok).mean
    if kv is None:
        return None
    return (weight_bytes + rows * kv) / (bandwidth_gb_s * 1e9) * 1e3


def live_roofline_ms(roofline: RooflineStatus, records: Sequence[RequestRecord]
                     ) -> tuple[float, float]:
    """(the roofline a row's TPOT is held against, the mean rows per step): batch 1's when
    the requests ran alone (or the KV size is unknown), else the batch's at their mean
    occupancy — a row of a 6-row step waits for the whole step."""
    ok = [r for r in records if r.ok]
    rows = summarize(r.batch_size for r in ok).mean or 1.0
    if rows <= BATCHED or not roofline.kv_bytes_per_position:
        return roofline.roofline_ms, rows
    step = batch_step_ms(roofline.step_bytes, roofline.kv_bytes_per_position,
                         roofline.bandwidth_gb_s, ok, rows)
    return (roofline.roofline_ms if step is None else step), rows
