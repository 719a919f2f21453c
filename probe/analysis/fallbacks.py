"""Fallbacks, said where they happen. Four kinds, one channel — the session's compile events,
which the journal keeps, the compile feed lists, the snapshot saves and `replay` prints at its
end (`fallback_lines`):

- `fallback`: a compile failed and the config is served eager (CompileProbe);
- `limit`: dynamo hit its recompile limit (FailOnRecompileLimitHit): the function's remaining
  shapes run eager, which a plain deployment never says;
- `degraded` (records.DEGRADED, the generic kind): any other fallback the engine takes, with
  `function` naming what fell back — the load calibration stopped at its ×0.125 floor
  (`CALIBRATION_FLOOR`), a CUDA graph skipped (`CUDAGRAPH_SKIPPED`, reported by the GPU side);
  it takes no time, so no figure counts it as a compile.

Every message is kept and shown whole."""

from __future__ import annotations

from typing import Sequence

from probe.common.units import fmt_clock
from probe.contract.records import DEGRADED, CompileEvent

CALIBRATION_FLOOR = "load calibration"
CUDAGRAPH_SKIPPED = "cudagraphs"
FALLBACK_KINDS = ("fallback", "limit", DEGRADED)
LABELS = {"fallback": "eager fallback", "limit": "recompile limit (the rest runs eager)",
          DEGRADED: "fallback"}


def degraded_event(t_s: float, what: str, text: str, config_id: str | None,
                   request_id: str | None = None) -> CompileEvent:
    """A generic fallback as an event of the session: `what` fell back, `text` says it whole."""
    return CompileEvent(compile_id="-", kind=DEGRADED, function=what, start_s=t_s,
                        duration_s=0.0, reason=text, request_id=request_id, config_id=config_id)


def fallbacks(events: Sequence[CompileEvent]) -> list[CompileEvent]:
    return [e for e in events if e.kind in FALLBACK_KINDS]


def fallback_line(event: CompileEvent) -> str:
    """ "2:14 recompile limit (the rest runs eager) · c3 · decode_step: FailOnRecompileLimitHit:
    …" — the whole message."""
    where = " · ".join(x for x in (event.config_id, event.function) if x)
    reason = f": {event.reason}" if event.reason else ""
    return f"{fmt_clock(event.start_s)} {LABELS.get(event.kind, event.kind)} · {where}{reason}"


def fallback_lines(events: Sequence[CompileEvent]) -> list[str]:
    """The replay summary's section (empty when nothing fell back)."""
    found = fallbacks(events)
    if not found:
        return []
    return [f"fallbacks ({len(found)}):"] + [f"  {fallback_line(e)}" for e in found]
