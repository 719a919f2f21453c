"""Charts of a bench report's sections, each from the numbers report.json holds for it (the
sections' `configs`, the runs' figures, the open-loop results) — never recomputed. Each returns
the series it plotted, keyed as the report keys them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from probe.report_charts.canvas import (
    Caption,
    Chart,
    bar_style,
    finish,
    log_scale,
    new_figure,
    style,
)

# how E6's verdict words are drawn (hatch), so kept and dropped steps read without colour
VERDICT_HATCH = {"control": "", "keep": "", "keep?": "--", "no measurable gain": "---",
                 "drop": "xxx", "drop?": "xx", "unstable": "\\\\\\", "not supported": "///",
                 "n/a": "///"}
SHORT_VERDICT = {"no measurable gain": "no gain"}
PHASES = (("tracing", "tracing_s"), ("AOTAutograd", "aot_s"), ("inductor", "inductor_s"),
          ("cache load", "cache_load_s"))


def _median(spread: Mapping | None) -> float | None:
    return (spread or {}).get("median")


@dataclass(frozen=True)
class RateCurve:
    """One config's open-loop replays: p95 (and SLO attainment, when measured) by offered rate,
    and its knee: the highest offered rate it kept up with."""
    label: str
    offered_rps: tuple[float, ...]
    p95_ms: tuple[float | None, ...]
    knee_rps: float | None
    attainment: tuple[float | None, ...] | None = None    # fraction of requests within the SLO


def e7_curves(results: Mapping) -> dict[str, list[RateCurve]]:
    """E7's runs (report.json runs.E7.runs) as one panel per trace, one curve per mode."""
    panels: dict[str, dict[str, list[Mapping]]] = {}
    for run in (results.get("runs") or {}).values():
        panels.setdefault(run["trace"], {}).setdefault(run["mode"], []).append(run)
    return {trace: [_curve(mode, runs) for mode, runs in modes.items()]
            for trace, modes in panels.items()}


def e8_curves(section: Mapping, trace: str) -> dict[str, list[RateCurve]]:
    """E8's layouts (section configs), each one replay of `trace` at one offered rate."""
    configs = section.get("configs") or {}
    return {trace: [_curve(layout, [run]) for layout, run in configs.items()
                     if isinstance(run, Mapping) and "offered_rps" in run]}


def _curve(label: str, runs: Sequence[Mapping]) -> RateCurve:
    runs = sorted(runs, key=lambda r: r["offered_rps"])
    kept = [r["offered_rps"] for r in runs if r.get("keeps_up")]
    attainment = ([r.get("slo_attainment") for r in runs]
                  if any("slo_attainment" in r for r in runs) else None)
    return RateCurve(label, tuple(r["offered_rps"] for r in runs),
                     tuple((r.get("latency_ms") or {}).get("p95") for r in runs),
                     max(kept, default=None), None if attainment is None else tuple(attainment))


def rate_curves(panels: Mapping[str, Sequence[RateCurve]], caption: Caption, *, name: str,
                title: str) -> Chart:
    """p95 against offered rate per config, one panel per trace, each config's knee starred;
    a second row of SLO attainment where the runs measured it."""
    with_slo = any(c.attainment is not None for curves in panels.values() for c in curves)
    figure, axes = new_figure(4.6 * max(len(panels), 1) + 1.5, 6.5 if with_slo else 4.2,
                              rows=2 if with_slo else 1, cols=max(len(panels), 1))
    series: dict[str, dict] = {}
    for column, (trace, curves) in enumerate(panels.items()):
        top = axes[column]
        for index, curve in enumerate(curves):
            look = style(index)
            line, = top.plot(curve.offered_rps, curve.p95_ms, label=curve.label, **look)
            line.set_gid(f"rate-{trace}-{curve.label}")
            if curve.knee_rps is not None:
                knee = curve.p95_ms[curve.offered_rps.index(curve.knee_rps)]
                top.plot([curve.knee_rps], [knee], marker="*", markersize=13, linestyle="none",
                         color=look["color"], markeredgecolor="black")
            series[f"{trace}/{curve.label}"] = {
                "offered_rps": list(curve.offered_rps), "p95_ms": list(curve.p95_ms),
                "knee_rps": curve.knee_rps,
                "attainment": None if curve.attainment is None else list(curve.attainment)}
            if with_slo and curve.attainment is not None:
                bottom = axes[len(panels) + column]
                bottom.plot(curve.offered_rps, [None if a is None else 100 * a
                                                for a in curve.attainment], **look)
                bottom.set_xlabel("offered rate (requests/s)")
                bottom.set_ylabel("SLO attainment (% of requests)")
        log_scale(top)
        top.set_title(trace)
        top.set_xlabel("offered rate (requests/s)")
        top.set_ylabel("p95 latency (ms, log scale)")
        top.legend(loc="upper left")
    return finish(name, title, figure, caption.text(
        "Open loop: requests arrive at the trace's times scaled to each rate. ★ the knee: "
        "the highest offered rate the config kept up with (served ≥ 90% of it)."), series)


def e6_waterfall(section: Mapping, caption: Caption) -> Chart:
    """E6: each step's warm p95 and tokens/s (median of the passes, bars from min to max),
    hatched by its verdict (kept, no gain, dropped, unstable)."""
    from matplotlib.patches import Patch
    configs = section.get("configs") or {}
    steps = [name for name, c in configs.items() if isinstance(c, Mapping) and "verdict" in c]
    figure, (left, right) = new_figure(10.0, 4.8, cols=2)
    series = {"steps": steps, "p95_ms": [], "p95_ms_low": [], "p95_ms_high": [], "tokens_per_s": [],
              "tokens_per_s_low": [], "tokens_per_s_high": [], "verdict": []}
    for figure_name, axes, key in (("p95_ms", left, "latency_p95_ms"),
                                   ("tokens_per_s", right, "tokens_per_s")):
        for index, step in enumerate(steps):
            spread = configs[step].get(key) or {}
            value = spread.get("median")
            series[figure_name].append(value)
            series[f"{figure_name}_low"].append(spread.get("low"))
            series[f"{figure_name}_high"].append(spread.get("high"))
            if value is None:
                continue
            verdict = configs[step]["verdict"].get("verdict", "n/a")
            axes.bar(index, value, color="#9ecae1" if verdict not in ("drop", "drop?")
                     else "#fdae6b", edgecolor="black", linewidth=0.6,
                     hatch=VERDICT_HATCH.get(verdict, "///"))
            if spread.get("low") is not None and spread.get("high") is not None:
                axes.errorbar(index, value, yerr=[[value - spread["low"]],
                                                  [spread["high"] - value]],
                              color="black", capsize=3, linewidth=0.9)
            if figure_name == "p95_ms":
                axes.annotate(SHORT_VERDICT.get(verdict, verdict), (index, value),
                              xytext=(0, 4), textcoords="offset points", ha="center",
                              va="bottom", rotation=90, fontsize=7)
        axes.set_xticks(range(len(steps)), steps, rotation=35, ha="right")
        axes.margins(y=0.25)
    series["verdict"] = [configs[s]["verdict"].get("verdict") for s in steps]
    shown = list(dict.fromkeys(series["verdict"]))
    right.legend([Patch(facecolor="#fdae6b" if v in ("drop", "drop?") else "#9ecae1",
                        edgecolor="black", hatch=VERDICT_HATCH.get(v, "///")) for v in shown],
                 shown, loc="lower right", title="verdict")
    log_scale(left)
    left.set_ylabel("warm p95 latency (ms, log scale)")
    right.set_ylabel("warm tokens/s")
    return finish("e6_waterfall", "E6 — one more optimization per step", figure, caption.text(
        "Bars: median of the warm passes; whiskers: their min–max. Hatches: keep (plain), "
        "no measurable gain (dashes), drop (crosses), unstable (backslashes)."), series)


ROOFLINE_BARS = ("memory roofline", "matmuls alone", "compiled", "best lever")


def roofline_bars(section: Mapping, caption: Caption) -> Chart:
    """Per precision: its memory roofline, its matmuls alone, the compiled step as it is and
    the best lever's step (ms per output token, log scale)."""
    configs = section.get("configs") or {}
    roofs = configs.get("roofline_ms_per_token") or {}
    best = configs.get("precisions") or {}
    precisions = list(roofs)
    figure, (axes,) = new_figure(8.5, 4.6)
    series: dict[str, dict] = {}
    width = 0.8 / len(ROOFLINE_BARS)
    for p_index, precision in enumerate(precisions):
        values = {"memory roofline": roofs.get(precision),
                  "matmuls alone": (best.get(precision) or {}).get("matmul_chain_ms"),
                  "compiled": _median((configs.get(precision) or {}).get("ms_per_token")),
                  "best lever": (best.get(precision) or {}).get("compiled_ms")}
        series[precision] = {**values, "best_config": (best.get(precision) or {}).get("config")}
        for b_index, bar in enumerate(ROOFLINE_BARS):
            if values[bar] is None:
                continue
            axes.bar(p_index + (b_index - 1.5) * width, values[bar], width,
                     label=bar if p_index == 0 else None, **bar_style(b_index))
    eager = _median((configs.get("hf eager") or {}).get("ms_per_token"))
    if eager is not None:
        axes.axhline(eager, color="black", linestyle="--", linewidth=1.0,
                     label="HF eager generate (fp32)")
    series["hf eager"] = {"ms_per_token": eager}
    axes.set_xticks(range(len(precisions)), precisions)
    log_scale(axes)
    axes.set_ylabel("time per output token (ms, log scale)")
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return finish("roofline", "Roofline per precision", figure, caption.text(
        "Memory roofline: weight bytes one decode step reads ÷ measured bandwidth. Compiled: "
        "the fullgraph step as it is; best lever: its fastest lever (median of warm passes)."),
        series)


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


def padding_waste(section: Mapping, caption: Caption) -> Chart:
    """E4: the padding waste of each bucket set, on the replayed requests and (computed by the
    planner) over the whole trace."""
    configs = section.get("configs") or {}
    sets = [role for role in ("none", "planner", "pow2") if role in configs]
    whole = configs.get("whole_trace") or {}
    replayed = [configs[r].get("padding_waste_pct") for r in sets]
    over_trace = [{"none": 0.0 if whole else None, "planner": whole.get("planner_waste_pct"),
                   "pow2": whole.get("pow2_waste_pct")}[r] for r in sets]
    figure, (axes,) = new_figure(7.0, 4.0)
    labels = [f"{r}\n{','.join(map(str, configs[r].get('edges') or [])) or 'no edges'}"
              for r in sets]
    for b_index, (label, values) in enumerate((("replayed requests", replayed),
                                               ("whole trace (computed)", over_trace))):
        for index, value in enumerate(values):
            if value is not None:
                axes.bar(index + (b_index - 0.5) * 0.38, value, 0.38, label=label,
                         **bar_style(b_index))
                axes.annotate(f"{value:.1f}%", (index + (b_index - 0.5) * 0.38, value),
                              xytext=(0, 2), textcoords="offset points", ha="center",
                              fontsize=7)
    handles, names = axes.get_legend_handles_labels()
    unique = dict(zip(names, handles))
    axes.legend(unique.values(), unique.keys(), loc="upper left")
    axes.set_xticks(range(len(sets)), labels)
    axes.set_ylabel("padding waste (% of padded input tokens)")
    return finish("padding_waste", "E4 — padding waste per bucket set", figure, caption.text(
        "Waste: (padded − real) / padded input tokens; bucket edges under each set."),
        {"sets": sets, "replayed_pct": replayed, "whole_trace_pct": over_trace})


def compile_split(runs: Mapping[str, Mapping], caption: Caption) -> Chart:
    """Each compiled run's compile seconds as dynamo split them (tracing, AOTAutograd,
    inductor, cache load), stacked."""
    split = {run.get("label") or key: run["compile_phases"] for key, run in runs.items()
             if isinstance(run, Mapping) and run.get("compile_phases")
             and sum(run["compile_phases"].get(k, 0.0) for _, k in PHASES) > 0}
    figure, (axes,) = new_figure(9.0, 1.6 + 0.45 * max(len(split), 1))
    labels = list(split)
    left = [0.0] * len(labels)
    for p_index, (name, key) in enumerate(PHASES):
        values = [split[label].get(key, 0.0) for label in labels]
        axes.barh(range(len(labels)), values, left=left, label=name, **bar_style(p_index))
        left = [a + b for a, b in zip(left, values)]
    axes.set_yticks(range(len(labels)), labels, fontsize=7.5)
    axes.invert_yaxis()
    axes.set_xlabel("compile time (s)")
    axes.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=len(PHASES))
    return finish("compile_split", "Compile time per config, by phase", figure, caption.text(
        "Summed over each run's compiles as dynamo timed them; cache load: AOTAutograd's time "
        "for graphs served whole from inductor's on-disk caches."),
        {label: {name: split[label].get(key, 0.0) for name, key in PHASES} for label in labels})
