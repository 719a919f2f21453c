"""`make gpu-check`'s J/token: how the report's energy figures are built from the engine's
records and its ledger, and what the issue expects of them (reported, never a failure).

One definition: J/token is `energy_stats`'s (probe/analysis/energy.py), the joules the engine's
ledger charged to the requests (`energy_j`, read from NVML's total-energy counter at each step's
boundaries; the board power integrated only where the GPU has no counter, and `source` says
which) summed over the requests ÷ their served output tokens. It is the figure `snapshot show`
prints for the same records. The counter's rise over the whole timed window was not chosen: it
also holds the host's gaps between requests (the idle floor), which no request caused and which
`snapshot show` reports apart; the decode rows give that floor beside the figure
(`window_idle_j`), so a counter that ticked inside a gap is seen rather than hidden.

- decode matrix: over the timed requests only (the warm-up's compile and the profiled request
  are left out, as they are from ms/token);
- batching: the replay's saved session, its config's segment figure (`session_segments`).
Without a counter the entry is `{"unavailable": why}`, never a number.
"""

from __future__ import annotations

from typing import Sequence

from probe.analysis.energy import energy_stats
from probe.analysis.stats import session_segments
from probe.contract.figures import ConfigEnergy
from probe.contract.records import RequestRecord
from probe.contract.session import SessionData

GRAPH_MODES = ("compile=reduce-overhead", "compile=max-autotune")
NO_SERVED = "no timed request was served: no tokens to divide by"


def timed_energy(timed: Sequence[RequestRecord], before: ConfigEnergy | None,
                 after: ConfigEnergy | None) -> dict:
    """The decode matrix's entry: J/token over the timed requests, from the ledger as it stood
    before the first and after the last (`after` gives the source or why there is none)."""
    stats = energy_stats(timed, after, None)
    if stats.unavailable is not None:
        return {"unavailable": stats.unavailable}
    if stats.j_per_token is None:
        return {"unavailable": NO_SERVED, "source": stats.source}
    assert after is not None        # energy_stats answered a number from it
    request_j = sum(r.energy_j or 0.0 for r in timed)
    idle_j = after.idle_j - (before.idle_j if before is not None else 0.0)
    return {"source": stats.source, "j_per_token": stats.j_per_token, "request_j": request_j,
            "tokens": sum(r.output_tokens for r in timed if r.ok and r.energy_j is not None),
            "timed_s": sum(r.latency_ms for r in timed) / 1000.0,
            "window_idle_j": idle_j}


def session_energy(data: SessionData) -> dict:
    """The batching run's entry: its session's segment figure, as `snapshot show` prints it
    (the segment that served the most requests, where the replay changed config)."""
    segments = [s for s in session_segments(data) if s.energy is not None]
    if not segments:
        return {"unavailable": "the session has no segment with energy"}
    counts = {s.config_id: 0 for s in segments}
    for record in data.records:
        if record.config_id in counts:
            counts[record.config_id] += 1
    chosen = max(segments, key=lambda s: counts[s.config_id])
    assert chosen.energy is not None
    entry: dict = chosen.energy.as_dict()
    if chosen.energy.unavailable is None and chosen.energy.j_per_token is None:
        entry["unavailable"] = NO_SERVED
    if len(segments) > 1:
        entry["config_id"] = chosen.config_id
    return entry


def energy_text(entry: dict | None) -> str:
    """A log line's part: "0.0123 J/token (NVML energy counter)" or why there is none."""
    if not entry:
        return "J/token: not measured (the run ended before it)"
    if entry.get("j_per_token") is None:
        return f"J/token: not measurable here ({entry.get('unavailable') or 'no figure'})"
    return f"{entry['j_per_token']:.4g} J/token ({entry.get('source')})"


def _j(row: dict) -> float | None:
    return (row.get("energy") or {}).get("j_per_token")


def _graphs(options: Sequence[str] | str) -> bool:
    text = options if isinstance(options, str) else ",".join(options)
    return any(mode in text for mode in GRAPH_MODES)


def expectations(report: dict) -> dict[str, bool]:
    """What the issue expects of J/token, read from the report; a comparison whose figures are
    missing (no counter, a crashed config) is left out rather than judged."""
    checks: dict[str, bool] = {}
    decode = report.get("decode", {})
    for precision in ("fp32", "fp16", "bf16"):
        graphs = _j(decode.get(f"fullgraph {precision} compile=reduce-overhead", {}))
        for mode in ("off", "default"):
            other = _j(decode.get(f"fullgraph {precision} compile={mode}", {}))
            if graphs is not None and other is not None:
                checks[f"J/token lower under CUDA graphs than compile={mode}, fullgraph "
                       f"{precision}"] = graphs < other
    rows = [r for r in report.get("batching", []) if isinstance(r.get("slots"), int)]
    with_graphs = sorted(((r["slots"], j) for r in rows
                          if _graphs(r.get("options", ())) and (j := _j(r)) is not None))
    by_slots = dict(with_graphs)        # the default sizing may repeat a slot count: last kept
    if len(by_slots) > 1:
        ladder = sorted(by_slots.items())
        checks["J/token falls as slots grow (" + " → ".join(str(s) for s, _ in ladder)
               + ")"] = all(b[1] < a[1] for a, b in zip(ladder, ladder[1:]))
    sized = [r for r in rows if r.get("max_batch") == "sized"]
    graphed = [_j(r) for r in sized if _graphs(r.get("options", ()))]
    eager = [_j(r) for r in sized if not _graphs(r.get("options", ()))]
    if graphed and eager and graphed[-1] is not None and eager[-1] is not None:
        checks["J/token lower with CUDA graphs than without, continuous batching at the "
               "default sizing"] = graphed[-1] < eager[-1]
    return checks
