"""E8 — KV layout: a static region per slot vs a paged block pool (PagedAttention-style), under
continuous batching, at the same KV budget, on chat at a load far above one-at-a-time
capacity — so requests queue, and the layout decides how many of them decode together."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Mapping

from probe.analysis.stats import session_segments
from probe.bench.experiments.base import OpenLoopExperiment, Template
from probe.common.units import NO_DATA, fmt_bytes, fmt_fraction, fmt_ms, fmt_num
from probe.contract.options import OptConfig
from probe.contract.records import KVPool
from probe.contract.settings import EngineSettings
from probe.report_charts.bench_charts import RateCurve, rate_curve
from probe.report_charts.canvas import Caption, Chart, bar_style, finish, new_figure
from probe.runs.openloop import (
    MAX_BATCH,
    OpenLoopFigures,
    OpenLoopStudy,
    open_loop_figures,
    replay,
)
from probe.runs.runs import calibrate_ms
from probe.runs.verdict import DRIFT_TOLERANCE, speed_drift

TRACE = "chat"
HIGH_LOAD = 16.0                         # offered rate, × the one-at-a-time capacity
QUICK_REQUESTS, FULL_REQUESTS = 24, 64
# run key → (layout, paged slots factor): "paged" holds factor × the slots in the same bytes;
# "paged_same_slots" has the static layout's slot count, so its throughput against static's is
# what the paged step itself costs (the ratio the issue asks to keep at 0.9 or above)
LAYOUTS = {"static": ("static", 1), "paged_same_slots": ("paged", 1),
           "paged": ("paged", EngineSettings.paged_slots_factor)}
SAME_SLOTS = "paged_same_slots"
SAME_SLOTS_AIM = 0.9                     # paged tokens/s over static, same slots
# static and paged_same_slots alternate this many times (the order reversed every other round)
# and the median round is the one reported: back-to-back pairs of ~2 s replays moved the ratio
# 0.72–1.14 on a quiet 2-core VM (its calibration moved 3.7–6.2 ms within one E8 run), so one
# pair cannot resolve a 0.9 aim
SAME_SLOT_ROUNDS = 5
PAPER_WASTE = {"static": "60–80%", "paged": "under 4%"}
PAPER = ("Kwon et al., Efficient Memory Management for Large Language Model Serving with "
         "PagedAttention (vLLM), SOSP 2023")

TEMPLATE = Template(
    "E8", "KV layout",
    hypothesis="A KV cache in blocks taken as tokens come wastes almost nothing, so the same "
               "budget holds more requests at once than a region reserved per slot for the "
               "worst case.",
    variable="kv_layout: static (a region per slot: every output and input position) vs paged "
             f"(blocks of {EngineSettings.kv_block_tokens} positions from one pool), at the "
             f"same slots and at {EngineSettings.paged_slots_factor}× the slots",
    control=f"kv_layout=static, continuous batching with {MAX_BATCH} slots, the same KV bytes",
    expected="static wastes most of what it holds (the vLLM paper: 60–80% in contiguous "
             "pre-allocation) and stops at its slot count; paged wastes a block's tail (the "
             "paper: under 4%) and decodes more requests together, so more are served per "
             "second at a lower p95.")


@dataclass(frozen=True)
class LayoutRun:
    layout: str
    slots: int
    figures: OpenLoopFigures
    kv_waste_pct: float | None          # segment's 100 · (held − used) / held
    kv_budget_bytes: int | None         # static: slots × a region; paged: the pool
    kv_pool: KVPool | None
    calibration_ms: tuple[float, ...] = ()      # the machine's speed before and after

    def as_dict(self) -> dict:
        return {"layout": self.layout, "slots": self.slots, **self.figures.as_dict(),
                "kv_waste_pct": self.kv_waste_pct, "kv_budget_bytes": self.kv_budget_bytes,
                "kv_pool": None if self.kv_pool is None else asdict(self.kv_pool),
                "calibration_ms": list(self.calibration_ms)}


def layout_run(layout: str, data, rate: float, calibration_ms: tuple[float, ...] = (),
               slots: int | None = None, device_busy_pct: float | None = None) -> LayoutRun:
    """One replay's figures; `slots` defaults to what the layout gets in E8's first form
    (static: MAX_BATCH, paged: the slots factor × MAX_BATCH)."""
    records = list(data.records)
    segment = session_segments(data)[0]
    pool = segment.kv_pool
    budget: int | None
    if pool is not None:
        slots = slots or MAX_BATCH * EngineSettings.paged_slots_factor
        budget = pool.blocks_total * pool.block_bytes
    else:
        slots = slots or MAX_BATCH
        budget = slots * max((r.kv_cache_bytes for r in records if r.ok), default=0) or None
    return LayoutRun(layout, slots, open_loop_figures(records, rate, device_busy_pct),
                     segment.kv_waste_pct, budget, pool, calibration_ms)


def measure(study: OpenLoopStudy) -> tuple[dict, dict]:
    workload = study.workload(TRACE)
    capacity = study.capacity_rps(TRACE)
    rate = capacity * HIGH_LOAD
    requests = max(len(study.plan.requests),
                   QUICK_REQUESTS if study.plan.quick else FULL_REQUESTS)

    kept = [0]

    def run(key: str) -> LayoutRun:
        layout, factor = LAYOUTS[key]
        slots = MAX_BATCH * factor if layout == "paged" else MAX_BATCH
        study.message(f"E8 {TRACE} kv_layout={layout}, {slots} slots, at {rate:.2f} req/s "
                      f"({HIGH_LOAD:g}× capacity)")
        options = OptConfig(decode="fullgraph", batching="continuous", kv_layout=layout)
        before = calibrate_ms()
        data, busy = replay(study.context, options, workload, rate=rate, requests=requests,
                            paged_slots_factor=factor)
        done = layout_run(layout, data, rate, (before, calibrate_ms()), slots, busy)
        kept[0] += 1
        study.keep("E8", f"{key} #{kept[0]}", done.as_dict())  # a signal next keeps it
        return done

    pairs = []
    for round_ in range(SAME_SLOT_ROUNDS):
        order = ("static", SAME_SLOTS) if round_ % 2 == 0 else (SAME_SLOTS, "static")
        pairs.append({key: run(key) for key in order})
    ratios = [paged_static_ratio(pair) for pair in pairs]
    runs = {**median_pair(pairs), "paged": run("paged")}
    results = {"trace": TRACE, "factor": HIGH_LOAD, "capacity_rps": capacity,
               "requests": requests, "runs": {k: run.as_dict() for k, run in runs.items()},
               "paged_static_ratio": paged_static_ratio(runs),
               "paged_static_ratios": ratios}
    return results, build(runs, capacity, requests, ratios)


def median_pair(pairs: list[dict[str, LayoutRun]]) -> dict[str, LayoutRun]:
    """The round whose paged/static ratio is the median of the rounds' (the lower middle one
    for an even count; the first round when none has a ratio), static's run first."""
    rated = sorted((ratio, index) for index, pair in enumerate(pairs)
                   if (ratio := paged_static_ratio(pair)) is not None)
    chosen = pairs[rated[(len(rated) - 1) // 2][1]] if rated else pairs[0]
    return {key: chosen[key] for key in ("static", SAME_SLOTS) if key in chosen}


def paged_static_ratio(runs: dict[str, LayoutRun]) -> float | None:
    """Generated tokens per second, paged over static, at the same number of slots."""
    static, paged = runs.get("static"), runs.get(SAME_SLOTS)
    if not (static and paged and static.figures.tokens_per_s and paged.figures.tokens_per_s):
        return None
    return paged.figures.tokens_per_s / static.figures.tokens_per_s


def build(runs: dict[str, LayoutRun], capacity: float, requests: int,
          ratios: list[float | None] | None = None) -> dict:
    """`runs`: the median same-slots round and the paged run; `ratios`: every round's
    paged/static, in the order they ran."""
    rows, observed = [], []
    for key, run in runs.items():
        f, pool = run.figures, run.kv_pool
        rows.append([key, str(run.slots), fmt_bytes(run.kv_budget_bytes),
                     fmt_num(f.concurrency_peak, 1), fmt_num(f.occupancy_mean, 2),
                     fmt_num(f.served_rps, 2), fmt_num(f.tokens_per_s, 1),
                     fmt_num(f.device_busy_pct, 0),
                     fmt_ms(f.latency_ms.p95), str(f.failed), _pct(run.kv_waste_pct),
                     f"{pool.blocks_peak} / {pool.blocks_total}" if pool else "—",
                     PAPER_WASTE[run.layout]])
        observed.append(
            f"{key}: up to {fmt_num(f.concurrency_peak, 1)} requests decoded together "
            f"(mean {fmt_num(f.occupancy_mean, 2)}) in {run.slots} slots; "
            f"{fmt_num(f.served_rps, 2)} req/s served ({fmt_num(f.tokens_per_s, 1)} tokens/s), "
            f"p95 {fmt_ms(f.latency_ms.p95)}; "
            f"{_pct(run.kv_waste_pct)} of the KV bytes held were never filled"
            + (f"; {pool.blocks_peak} of {pool.blocks_total} blocks at the peak" if pool else "")
            + (f"; {f.failed} requests failed" if f.failed else "") + ".")
    static, paged, same = runs.get("static"), runs.get("paged"), runs.get(SAME_SLOTS)
    ratio = paged_static_ratio(runs)
    if static and same and ratio is not None:
        observed.append(
            f"paged vs static at the same {static.slots} slots: {ratio:.2f}× the tokens per "
            f"second (aim: at least {SAME_SLOTS_AIM:g}×), waste {_pct(same.kv_waste_pct)} vs "
            f"{_pct(static.kv_waste_pct)}"
            + (f"; the median of {len(ratios)} alternated rounds "
               f"({', '.join(NO_DATA if r is None else f'{r:.2f}×' for r in ratios)})"
               if ratios and len(ratios) > 1 else "") + ".")
    if static and paged and static.figures.served_rps and paged.figures.served_rps:
        observed.append(
            f"paged vs static at the same budget: "
            f"{paged.figures.served_rps / static.figures.served_rps:.2f}× the served rate, "
            f"p95 {fmt_ms(paged.figures.latency_ms.p95)} vs "
            f"{fmt_ms(static.figures.latency_ms.p95)}; waste "
            f"{_pct(paged.kv_waste_pct)} vs {_pct(static.kv_waste_pct)} "
            f"(the paper: under 4% vs 60–80%).")
    drift = speed_drift(tuple(ms for run in runs.values() for ms in run.calibration_ms))
    if drift and drift > DRIFT_TOLERANCE:
        observed.append(f"Careful: the machine's own speed moved {drift:.2f}× across these "
                        "runs (calibration), so their rates and p95 compare only within "
                        "that; the waste and concurrency figures do not depend on speed.")
    cause = [
        "A static slot reserves every output position (the longest output the traffic may "
        "ask for) and every encoder position (the longest input), for whatever request it "
        "holds; a typical chat request fills a fraction of that, and the number of slots is "
        "fixed by the budget over that worst case.",
        "The paged pool hands a request the blocks it fills — cross-attention blocks at join "
        "for its real input length, self-attention blocks as its tokens come — and takes them "
        "back the moment it leaves, so the only waste is the last block's unfilled tail, and "
        "the same bytes hold as many requests as their real lengths allow (up to the slots). "
        "A request the pool cannot promise its blocks to waits to join instead of failing.",
        "The paged step attends over the blocks in use, not the whole table: it reads the "
        "first W blocks of every slot's tables, W the blocks the longest active request needs "
        "rounded up to a power of two, so it reads a few blocks where a static slot attends "
        "over its whole region; the few widths are one compiled graph each. Those blocks are "
        "gathered into a copy kept between steps — again at a new width, and for "
        "cross-attention after a join — and each step writes its new token into the copy as "
        "well as the pool.",
    ]
    if ratio is not None and ratio < SAME_SLOTS_AIM:
        cause.append(f"Paged served {ratio:.2f}× static's tokens per second at the same slots: "
                     "what the step pays over static is the second write of each new token "
                     "(pool and kept copy), a gather of every layer's cross blocks at each "
                     "join and of all its blocks at a new width, and the table bookkeeping "
                     "in Python, where vLLM's kernel reads the blocks in place.")
    notes = [f"{TRACE}, open loop at {HIGH_LOAD:g}× the one-at-a-time capacity "
             f"({capacity:.2f} req/s), {requests} requests per layout run, continuous batching, "
             "decode=fullgraph, compile=off; every layout gets the same KV bytes (the paged pool "
             "is sized to what the static layout gives its slots)",
             "concurrency: the most rows a request was decoded with on average over its steps "
             "(peak) and the mean over requests; waste: 100 · (KV bytes held − filled) / held "
             "over the served requests; paged/static: generated tokens per second at the same "
             f"slots, static and paged_same_slots alternated {SAME_SLOT_ROUNDS} times (the "
             "order reversed every other round), the table's pair the median round",
             f"paper's figures: {PAPER}"]
    table = {"columns": ["run", "slots", "KV budget", "concurrency (peak)", "occupancy",
                         "served req/s", "tokens/s", "device busy %", "p95", "failed",
                         "KV waste", "blocks peak / total", "paper's waste"], "rows": rows}
    return TEMPLATE.section(table=table, observed=observed, root_cause=cause, notes=notes,
                            configs={k: run.as_dict() for k, run in runs.items()},
                            paged_static_ratio=ratio,
                            paged_static_ratios=list(ratios or ([] if ratio is None else [ratio])))


def _pct(value: float | None) -> str:
    return NO_DATA if value is None else fmt_fraction(value / 100)


def checks(section: dict) -> dict:
    configs = section.get("configs", {})
    static, paged = configs.get("static"), configs.get("paged")
    if not static or not paged:
        return {}
    waste = {k: c.get("kv_waste_pct") for k, c in (("static", static), ("paged", paged))}
    ok = (None not in waste.values() and waste["paged"] <= 10
          and waste["paged"] < waste["static"] and not static["failed"] and not paged["failed"])
    found = {"e8_static_waste_pct": waste["static"], "e8_paged_waste_pct": waste["paged"],
             "e8_concurrency_peak": {k: c.get("concurrency_peak")
                                     for k, c in (("static", static), ("paged", paged))},
             "e8_ok": bool(ok)}
    same, ratio = configs.get(SAME_SLOTS), section.get("paged_static_ratio")
    if same is not None:
        same_waste = same.get("kv_waste_pct")
        found.update(e8_paged_static_ratio=ratio, e8_same_slots_waste_pct=same_waste,
                     e8_paging_keeps_speed=bool(
                         ratio is not None and ratio >= SAME_SLOTS_AIM and same_waste is not None
                         and same_waste < 10 and not same["failed"]))
    return found


EXPERIMENT = OpenLoopExperiment(
    # measured: 335 s and 372 s for the full E8 on t5-small (2-core Zen 3, 2026-12-07; the
    # estimate had been 90)
    TEMPLATE, measure, checks, estimate_s=lambda plan: 30.0 if plan.quick else 355.0,
    figures=lambda c: [c.rate(lambda: e8_curves(c.section, c.runs.get("trace", TRACE))),
                       c.of(kv_held_vs_used)])


def e8_curves(section: Mapping, trace: str) -> dict[str, list[RateCurve]]:
    """E8's layouts (section configs), each one replay of `trace` at one offered rate."""
    configs = section.get("configs") or {}
    return {trace: [rate_curve(layout, [run]) for layout, run in configs.items()
                     if isinstance(run, Mapping) and "offered_rps" in run]}


def kv_held_vs_used(section: Mapping, caption: Caption) -> Chart:
    """E8: of the KV bytes each layout held, the share filled and the share never filled, with
    its budget and the most requests it decoded together."""
    configs = {k: c for k, c in (section.get("configs") or {}).items()
               if isinstance(c, Mapping) and "kv_waste_pct" in c}
    figure, (axes,) = new_figure(7.0, 4.0)
    series: dict[str, dict] = {}
    for index, (layout, run) in enumerate(configs.items()):
        waste = run.get("kv_waste_pct")
        if waste is None:
            continue
        used = 100.0 - waste
        axes.barh(index, used, label="filled" if index == 0 else None, **bar_style(0))
        axes.barh(index, waste, left=used, label="held, never filled" if index == 0 else None,
                  **bar_style(1))
        for start, share, what in ((0.0, used, "filled"), (used, waste, "never filled")):
            if share >= 12:
                axes.text(start + share / 2, index, f"{share:.1f}% {what}", ha="center",
                          va="center", fontsize=8,
                          bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.5})
        pool = run.get("kv_pool") or {}
        blocks = (f", {pool['blocks_peak']}/{pool['blocks_total']} blocks at peak"
                  if pool.get("blocks_total") else "")
        axes.annotate(f"budget {_mib(run.get('kv_budget_bytes'))}, up to "
                      f"{run.get('concurrency_peak') or 0:.1f} decoded together{blocks}",
                      (1, index + 0.42), fontsize=7.5, va="bottom")
        series[layout] = {"kv_waste_pct": waste, "used_pct": used,
                          "kv_budget_bytes": run.get("kv_budget_bytes"),
                          "concurrency_peak": run.get("concurrency_peak")}
    axes.set_yticks(range(len(configs)), list(configs))
    axes.set_xlim(0, 100)
    axes.set_ylim(-0.6, len(configs) - 0.1)
    axes.set_xlabel("% of the KV-cache bytes held by the served requests")
    axes.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=2)
    return finish("kv_held_vs_used", "E8 — KV cache held vs used, static vs paged", figure,
                  caption.text("Waste: 100 · (KV bytes held − filled) / held over the served "
                               "requests, at the same KV budget for both layouts."), series)


def _mib(value: float | None) -> str:
    return "?" if value is None else f"{value / 2 ** 20:.1f} MiB"
