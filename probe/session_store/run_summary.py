"""The table `replay` prints when it ends: latency, TTFT and TPOT percentiles, throughput and
failures over every record of the run, from probe/analysis/stats.py's figures (the ones the
dashboard, `snapshot show` and the bench report use)."""

from __future__ import annotations

from typing import Sequence

from probe.analysis.stats import session_segments, summarize, throughput_rps, tokens_per_s
from probe.common.units import fmt_ms, fmt_rate, plural
from probe.contract.records import RequestRecord
from probe.contract.session import SessionData
from probe.session_store.tables import text_table

LATENCIES = (("latency", "latency_ms"), ("ttft", "ttft_ms"), ("tpot", "tpot_ms"))


def run_summary(records: Sequence[RequestRecord]) -> str:
    """The percentiles over the served requests, then one line of rates and failures."""
    served = [r for r in records if r.ok]
    rows: list[list[object]] = []
    for label, field in LATENCIES:
        summary = summarize(getattr(r, field) for r in served)
        rows.append([label, fmt_ms(summary.p50), fmt_ms(summary.p95), fmt_ms(summary.p99),
                     fmt_ms(summary.max)])
    failed = len(records) - len(served)
    rates = (f"throughput {fmt_rate(throughput_rps(records), 'req/s')}, "
             f"{fmt_rate(tokens_per_s(records), 'tokens/s')}; "
             f"{plural(len(served), 'request')} served, {failed} failed")
    return "\n".join([text_table(["", "p50", "p95", "p99", "max"], rows), rates])


def energy_lines(data: SessionData) -> list[str]:
    """Each config's energy figure (the segment's, as `snapshot show` prints it), or why it
    is not measurable here."""
    return [f"{s.config_id} {s.energy.text()}" for s in session_segments(data)
            if s.energy is not None]
