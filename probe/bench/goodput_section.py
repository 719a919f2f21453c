"""report.md's goodput table: under `--slo`, every run's goodput and SLO attainment beside its
throughput, all over the same records and span (the run's session segment: every request it
served, warm-up included; the figures are probe/analysis/slo.py's, computed once per run)."""

from __future__ import annotations

from probe.common.units import fmt_fraction, fmt_num
from probe.contract.objective import slo_from_dict
from probe.session_store.tables import table


def goodput_markdown(report: dict) -> list[str]:
    slo = slo_from_dict(report.get("slo"))
    if slo is None:
        return []
    rows: list[list[object]] = [
        [f"`{key}`", str(run.get("label")), fmt_num(run.get("throughput_rps"), 3),
         fmt_num(run.get("goodput_rps"), 3), fmt_num(run.get("goodput_tokens_per_s"), 1),
         fmt_fraction(run.get("slo_attainment"))]
        for key, run in (report.get("runs") or {}).items()
        if isinstance(run, dict) and "goodput_rps" in run]
    if not rows:
        return []
    return ["## Goodput under the SLO", "",
            f"SLO `{slo.text()}`: a request is good when it was served and meets every bound. "
            "Each run's figures are over every request it served (warm-up included) and the "
            "span its throughput is measured over; requests were served back to back, so "
            "this is goodput at the run's own pace, not at an offered rate (the `capacity` "
            "experiment and `infertop tune` measure that).", "",
            table(["run", "config", "throughput (req/s)", "goodput (req/s)", "good tokens/s",
                   "SLO attained"], rows), ""]
