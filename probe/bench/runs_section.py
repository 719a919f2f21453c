"""report.md's "How each run ended": per run, the requests it served of its cap, why it stopped
(probe/runs/stopping.py), its seconds, what inductor's on-disk caches served it and its
warm-up (a whole pass, or one request served and the rest rehearsed: probe/runs/runs.py)."""

from __future__ import annotations

from probe.analysis.sequential import MARGIN
from probe.common.units import NO_DATA, fmt_s
from probe.runs.runs import REHEARSED_TOKENS
from probe.runs.stopping import FUTILE
from probe.session_store.tables import table

COLUMNS = ["run", "warm requests served", "why it stopped", "seconds",
           "FX graph cache hit / miss", "AOTAutograd cache hit / miss", "warm-up"]


def _cache(cache: dict | None, group: str) -> str:
    if not cache:
        return NO_DATA
    return f"{cache.get(f'{group}_cache_hit', 0)} / {cache.get(f'{group}_cache_miss', 0)}"


def _warmup(run: dict) -> str:
    rehearsed = (run.get("warmup") or {}).get("rehearsed") or 0
    if rehearsed:
        return f"1 served, {rehearsed} rehearsed at {REHEARSED_TOKENS} tokens"
    return f"a whole pass ({run['requests']})"


def run_rows(runs: dict) -> list[list[str]]:
    rows = []
    for key, run in runs.items():
        if not isinstance(run, dict) or "key" not in run or "steady" not in run:
            continue                    # an open-loop experiment's results, a failed run
        stopping = run.get("stopping") or {}
        served = (f"{stopping['served']} of {stopping['cap']}" if stopping
                  else str(sum(1 for _ in run.get("steady_passes") or ()) * run["requests"]))
        rows.append([f"`{key}`", served, stopping.get("text", NO_DATA),
                     fmt_s(run["run_wall_s"]) if run.get("run_wall_s") is not None else NO_DATA,
                     _cache(run.get("cache"), "fxgraph"), _cache(run.get("cache"), "autograd"),
                     _warmup(run)])
    return rows


def runs_markdown(report: dict) -> list[str]:
    rows = run_rows(report.get("runs") or {})
    if not rows:
        return []
    stopping = (report.get("settings") or {}).get("stopping", "sequential")
    how = ("each run's warm passes stop once its paired verdict against every run it is "
           f"compared with that has finished is settled — faster or slower by more than "
           f"{MARGIN:.0%}, or within ±{MARGIN:.0%} — on an always-valid 95% confidence "
           "sequence (Robbins' normal mixture "
           "with the running variance, an asymptotic confidence sequence), checked after every "
           "request; --repeats passes stay the cap. From its second pass a run gives up once "
           f"every verdict still open would need over {FUTILE:g}× its cap to settle (it says "
           "no difference yet, as at the cap), and a run no verdict reads serves one pass. "
           "Where a config compiles nothing more as "
           "its outputs grow, its warm-up serves the first request whole (the cold start) and "
           f"rehearses the others unrecorded at {REHEARSED_TOKENS} tokens, which compiles every "
           "shape the passes meet" if stopping == "sequential"
           else "every run serves --repeats warm passes (--stopping fixed)")
    cache_dir = (report.get("environment") or {}).get("inductor_cache_dir", NO_DATA)
    return ["## How each run ended", "",
            f"Stopping: {how}. Compiled graphs come from inductor's FX graph and AOTAutograd "
            f"caches in `{cache_dir}`, shared by every run and kept for the next study "
            "(E1's cold start measures a cold start in a folder of its own).", "",
            table(COLUMNS, rows), ""]
