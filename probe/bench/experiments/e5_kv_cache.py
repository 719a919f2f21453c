"""E5 — KV cache on vs off for short, medium and long outputs (HF generate, eager). The two
configs of each length share one engine and interleave their passes."""

from __future__ import annotations

from probe.bench.experiments.base import HF_EAGER, Experiment, Results, Template
from probe.common.percentile import percentiles
from probe.common.units import NO_DATA, fmt_bytes, fmt_ms
from probe.runs.plan import BenchRequest, Plan, RunSpec
from probe.runs.results import section_figures, steady_spread
from probe.runs.spread import fmt_spread
from probe.runs.verdict import usable, versus

TEMPLATE = Template(
    "E5", "KV cache",
    hypothesis="The KV cache makes per-token cost flat; without it cost grows with output "
               "length.",
    variable="kv_cache: on vs off, for short, medium and long outputs (HF generate, eager)",
    control="kv_cache=on",
    expected="little difference for short outputs, cache on clearly faster for long ones, "
             "at the cost of cache memory.")
QUICK_REQUESTS, QUICK_CLASSES = 2, ("short", "long")   # the check: long
# A pair stops after the round whose requests reach the interval's 20-request burn-in: with 10
# a pass that is the second round, with 8 it was the third, the cap. The long pair (cache off
# recomputes every prefix) was 446 s of a 637 s E5 on t5-small (2-core Zen 4, 2026-12-07).
FULL_REQUESTS = 10
left_out = TEMPLATE.when_quick("--quick serves short and long outputs (medium lies between "
                               "them); run without --quick to include medium")


def output_classes(output_lengths) -> dict[str, int]:
    """Short, medium and long outputs of this traffic: its 10th, 50th and 95th percentiles."""
    found = percentiles(output_lengths, (10, 50, 95)) or (2.0, 3.0, 4.0)
    short, medium, long = (max(2, int(round(v))) for v in found)
    return {"short": short, "medium": max(medium, short + 1),
            "long": max(long, medium + 1, short + 2)}


def requests_by_class(plan: Plan) -> dict[str, tuple[BenchRequest, ...]]:
    inputs = plan.requests[:QUICK_REQUESTS if plan.quick else FULL_REQUESTS]
    return {name: tuple(BenchRequest(id=f"{r.id}-{name}", input_length=r.input_length,
                                     output_length=tokens, text=r.text) for r in inputs)
            for name, tokens in output_classes(plan.trace_output_lengths).items()
            if not plan.quick or name in QUICK_CLASSES}


def runs(plan: Plan) -> dict[str, RunSpec]:
    specs = {}
    for name, requests in requests_by_class(plan).items():
        tokens = requests[0].output_length
        for kv in ("on", "off"):
            specs[f"{name}/{kv}"] = plan.spec(HF_EAGER.with_option("kv_cache", kv),
                                              requests=requests,
                                              requests_name=f"E5-{name}-{tokens}-tokens")
    return specs


def groups(plan: Plan) -> list[tuple[str, ...]]:
    return [(f"{name}/on", f"{name}/off") for name in requests_by_class(plan)]


def build(plan: Plan, results: Results, env: dict) -> dict:
    rows: list[list[str]] = []
    configs: dict[str, dict] = {}
    observed: list[str] = []
    for name, requests in requests_by_class(plan).items():
        cached, uncached = results.get(f"{name}/on"), results.get(f"{name}/off")
        tokens = requests[0].output_length
        configs[f"{name}/on"] = {**section_figures(cached), "output_tokens": tokens}
        configs[f"{name}/off"] = {**section_figures(uncached), "output_tokens": tokens}
        on, off = usable(cached), usable(uncached)
        if isinstance(on, str):
            rows.append([name, str(tokens), on] + [NO_DATA] * 5)
            continue
        if isinstance(off, str):
            rows.append([name, str(tokens), off] + [NO_DATA] * 5)
            continue
        against = versus(on, off)
        configs[f"{name}/on"]["vs_off"] = against.as_dict()
        rows.append([name, str(tokens), fmt_spread(on.steady.latency_p50_ms),
                     fmt_spread(off.steady.latency_p50_ms), against.text,
                     fmt_spread(on.steady.tpot_ms), fmt_spread(off.steady.tpot_ms),
                     fmt_bytes(on.kv_cache_peak_bytes)])
        observed.append(f"{name} outputs ({tokens} tokens): cache on "
                        f"{fmt_ms(steady_spread(on, 'latency_p50_ms').median)} vs off "
                        f"{fmt_ms(steady_spread(off, 'latency_p50_ms').median)} p50 — "
                        f"{against.text}; the cache held {fmt_bytes(on.kv_cache_peak_bytes)} at "
                        f"its peak.")
    cause = ["Without a cache, token t re-runs the decoder over all t positions before it, so a "
             "request's decoder work grows with the square of its output length; the cache keeps "
             "each layer's keys and values (2 · layers · heads · d_kv · positions · bytes, for "
             "the output and the encoder's positions) and makes every step one position."]
    verdicts = {name: configs.get(f"{name}/on", {}).get("vs_off", {}).get("verdict")
                for name in requests_by_class(plan)}
    if verdicts.get("short") in ("within noise", "slower", "noise unknown"):
        cause.append("For short outputs there is little to recompute, and the cache's "
                     "bookkeeping costs about what it saves.")
    if verdicts.get("long") not in (None, "faster"):
        cause.append("Long outputs did not show the gain clearly here: on a model this small "
                     "the recomputed prefix is cheap next to the per-step overhead, and the "
                     "spread of the repeats is as large as the difference.")
    table = {"columns": ["outputs", "tokens", "cache on p50", "cache off p50", "on vs off",
                         "on ms/token", "off ms/token", "cache memory (peak)"], "rows": rows}
    return TEMPLATE.section(configs=configs, table=table, observed=observed, root_cause=cause,
                            decode_path="hf-generate, eager", notes=list(left_out(plan)))


def checks(section: dict) -> dict:
    configs = section.get("configs", {})
    if "long/on" not in configs:
        return {}
    on = (configs["long/on"].get("latency_p50_ms") or {}).get("median")
    off = (configs["long/off"].get("latency_p50_ms") or {}).get("median")
    return {"e5_long_on_ms": on, "e5_long_off_ms": off,
            "e5_ok": bool(on is not None and off is not None and on < off)}


EXPERIMENT = Experiment(TEMPLATE, runs, build, checks, groups=groups, left_out=left_out,
                        figures=lambda charts: [charts.cdf])
