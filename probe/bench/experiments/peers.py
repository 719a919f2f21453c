"""Peers: infertop's decode paths against CTranslate2, the T5 runtime a user would pick instead,
on the model's own weights (through CTranslate2's converter) and the same requests — batch 1,
greedy, each request's output length forced — their passes alternated in one run."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from probe.analysis.drift import RANDOM_WEIGHTS_CAVEAT
from probe.bench.experiments.base import (
    HF_EAGER,
    LEAN_STEP,
    REFERENCE,
    OpenLoopExperiment,
    Template,
    settings_text,
    with_settings,
)
from probe.bench.peer_figures import (
    INFERTOP,
    PEER,
    PathRun,
    agreement,
    family,
    merge_peer,
    precision_rows,
)
from probe.common.percentile import median
from probe.common.units import NO_DATA, fmt_fraction, fmt_ms, fmt_ratio
from probe.contract.options import OptConfig
from probe.engine.peer_ctranslate2 import INSTALL_HINT, PRECISION_NAMES, ctranslate2_available
from probe.engine.peer_process import CTranslate2Peer
from probe.runs.openloop import OpenLoopStudy
from probe.runs.plan import BenchRequest, RunSpec
from probe.runs.runs import make_engine, serve_pass
from probe.runs.spread import fmt_spread

TEMPLATE = Template(
    "peers", "Against CTranslate2",
    hypothesis="A compiled PyTorch decode step can serve T5 at batch 1 as fast as CTranslate2, "
               "the runtime built for it, in each precision both offer.",
    variable="engine and path: infertop's HF eager, compiled fullgraph and best configs; "
             "CTranslate2 in every compute type it offers on this machine",
    control="CTranslate2 on the same converted weights and requests, in a process of its own, "
            "its passes alternated with infertop's",
    expected="infertop's best step at or below the peer's ms/token in fp32 and int8, within "
             "1.3× of the fp32 roofline; tokens equal to the fp32 reference in fp32.")
# The shape: batch 1, 64 tokens in, 64 out. One input length for every request, so each
# compiled path compiles one encoder, one prefill and one decode step (the trace's lengths made
# the t5-small run compile a shape per bucket edge and pass its 1,300 s limit).
PEER_INPUT_TOKENS, PEER_OUTPUT_TOKENS = 64, 64
PEER_REQUESTS, QUICK_PEER_REQUESTS = 4, 2
# The int8 path as the engine serves it (quant=int8 and its default kernel), lean step on top.
BEST_INT8 = with_settings(REFERENCE.with_option("quant", "int8"), LEAN_STEP)
LEAN_FP32 = with_settings(REFERENCE, LEAN_STEP)
GEMV_FP32 = LEAN_FP32.with_option("gemv", "inductor")
FUSED_INT8 = BEST_INT8.with_option("qkv", "fused")
# Each precision's best is the fastest of its paths in the run (peer_figures.precision_rows):
# the lean step, and the lean step with each matmul lever on top (docs/engine-vs-peer.md has
# the levers measured and dropped from this list: freezing, int8 weight-only under gemv, qkv=fused
# under gemv=inductor, whose kernel already reads the three weights in one).
PATHS: tuple[tuple[str, str, OptConfig], ...] = (
    ("hf eager", "fp32", HF_EAGER),
    ("compiled fullgraph", "fp32", REFERENCE),
    ("lean step", "fp32", LEAN_FP32),
    ("lean step + gemv=inductor", "fp32", GEMV_FP32),
    ("lean step + gemv=inductor + parallel=large", "fp32",
     GEMV_FP32.with_option("parallel", "large")),
    ("lean step int8", "int8", BEST_INT8),
    ("lean step int8 + qkv=fused", "int8", FUSED_INT8),
    ("lean step int8 + qkv=fused + parallel=large", "int8",
     FUSED_INT8.with_option("parallel", "large")),
)
# --quick: the eager baseline and each precision's lean step (the matmul levers on top of it,
# one more cold compile each, are the full run's)
QUICK_PATHS = ("hf eager", "lean step", "lean step int8")


def not_installed_section() -> dict:
    return TEMPLATE.section(table={"columns": [], "rows": []},
                            observed=[f"CTranslate2 is not installed: {INSTALL_HINT}"],
                            root_cause=[], precisions={}, skipped=INSTALL_HINT)


def measure(study: OpenLoopStudy) -> tuple[dict, dict]:
    if not ctranslate2_available():
        section = not_installed_section()
        return {"skipped": section["skipped"]}, section
    import torch
    context, plan = study.context, study.plan
    requests = peer_requests(QUICK_PEER_REQUESTS if plan.quick else PEER_REQUESTS)
    study.message(f"peers: converting {plan.model} for CTranslate2, in a process of its own")
    loaded = context.require_model()
    peer = CTranslate2Peer(loaded.model, loaded.tokenizer, threads=torch.get_num_threads())
    compute_types = peer.compute_types
    study.message(f"peers: CTranslate2 offers {', '.join(compute_types)} here")
    paths: list[PathRun] = []
    loads: list[list[float]] = []
    try:
        reference: list[tuple[int, ...]] = []
        offered = {PRECISION_NAMES.get(t, t): t for t in compute_types}
        for name, precision, options in PATHS:
            if plan.quick and name not in QUICK_PATHS:
                continue
            # the peer in the compute types this path is held against (fp32: float32;
            # int8: int8 and int8_float32), so each pass costs one precision's peer passes
            alongside = {p: t for p, t in offered.items() if family(p) == precision}
            study.message(f"peers: {name} ({options.label()}) alternated with CTranslate2 "
                          f"{', '.join(alongside.values()) or '(none in this precision)'}")
            paths += serve_alternating(context, plan, requests, name, precision, options, peer,
                                       alongside, reference, loads)
    finally:
        peer.close()
    roof = study.environment.get("roofline") or {}
    section = build(paths, roofline_ms(roof), loads=loads, model=plan.model,
                    requests=len(requests), repeats=context.repeats)
    return {"paths": [p.as_dict() for p in paths], "precisions": section["precisions"]}, section


def peer_requests(count: int) -> tuple[BenchRequest, ...]:
    """`count` requests of the issue's shape; their input ids come from their seq (pass 0)."""
    return tuple(BenchRequest(f"peer-{i:02d}", PEER_INPUT_TOKENS, PEER_OUTPUT_TOKENS)
                 for i in range(count))


def peer_spec(plan, options: OptConfig, requests: tuple[BenchRequest, ...]) -> RunSpec:
    """One bucket edge at the requests' own length: nothing padded, one shape compiled."""
    spec = plan.spec(options, requests=requests, requests_name="peers-64-in-64-out")
    if options.bucketing != "on":
        return spec
    return dataclasses.replace(spec, edges=(PEER_INPUT_TOKENS,),
                               edges_name=f"one edge ({PEER_INPUT_TOKENS})")


def serve_alternating(context, plan, requests, name: str, precision: str, options: OptConfig,
                      peer, compute_types: dict[str, str], reference: list, loads: list
                      ) -> list[PathRun]:
    """One infertop path on a fresh engine (it starts cold: a warm-up pass first), then its
    warm passes alternated with one pass of the peer in each compute type (A B C … C B A)."""
    import os

    from probe.engine.engine import REFERENCE_OPTIONS
    from probe.engine.model.requests import EngineRequest, pad_batch
    spec = peer_spec(plan, options, tuple(requests))
    context = dataclasses.replace(context, keep_tokens=True)
    engine = make_engine(context, options, bucket_edges=spec.edges,
                         max_new_tokens=spec.max_new_tokens)
    try:
        if engine.options != options:
            return [PathRun(name, INFERTOP, precision, options.label(),
                            error="served as " + engine.options.label())]
        # pass 0 for every pass: the same input ids each time, for every path and the peer
        rows = [engine.row_for(EngineRequest(r.id, i, r.input_length, r.output_length, 0.0,
                                             text=r.text)) for i, r in enumerate(requests)]
        if not reference:
            import torch
            with torch.inference_mode():
                for row, r in zip(rows, requests):
                    ids, mask = pad_batch([row], len(row), engine.dims.pad_token_id,
                                          engine.device)
                    out = engine.switchboard.decoder(REFERENCE_OPTIONS)(ids, mask,
                                                                        r.output_length)
                    reference.append(tuple(out.tokens[0].tolist()))
        serve_pass(engine, spec, 0, "warm-up", lambda *a: None)
        for compute_type in compute_types.values():          # the peer's warm-up
            for row, r in zip(rows, requests):
                peer.generate(compute_type, row, r.output_length)
        ours: list = []
        theirs: dict[str, list] = {p: [] for p in compute_types}
        players: list[tuple[str, Callable]] = [("", lambda: serve_pass(
            engine, spec, 0, "warm", lambda *a: None).records)]
        players += [(p, _peer_pass(peer, t, rows, requests)) for p, t in compute_types.items()]
        for i in range(context.repeats):
            loads.append(list(os.getloadavg()))
            for who, play in (players if i % 2 == 0 else list(reversed(players))):
                (theirs[who] if who else ours).append(play())
    finally:
        engine.close()
    runs = [_infertop_run(name, precision, options, ours, reference)]
    runs += [_peer_run(p, t, passes, reference, name)
             for (p, t), passes in zip(compute_types.items(), theirs.values())]
    return runs


def _peer_pass(peer, compute_type: str, rows, requests) -> Callable[[], list]:
    return lambda: [peer.generate(compute_type, row, r.output_length)
                    for row, r in zip(rows, requests)]


def _infertop_run(name, precision, options, passes, reference) -> PathRun:
    per_pass = [[r.tpot_ms for r in records if r.ok and r.tpot_ms is not None]
                for records in passes]
    tokens = [tuple(r.tokens or ()) for r in passes[0]] if passes else []
    share, exact = agreement(tokens, reference)
    failed = next((r.error for records in passes for r in records if not r.ok), None)
    return PathRun(name, INFERTOP, precision, options.label(),
                   tuple(median(v) or 0.0 for v in per_pass if v),
                   tuple(v for p in per_pass for v in p), share, exact, error=failed)


def _peer_run(precision, compute_type, passes, reference, alongside: str) -> PathRun:
    per_pass = [[r.tpot_ms for r in results if r.tpot_ms is not None] for results in passes]
    share, exact = agreement([r.tokens for r in passes[0]] if passes else [], reference)
    return PathRun(f"ctranslate2 {compute_type}", PEER, precision, compute_type,
                   tuple(median(v) or 0.0 for v in per_pass if v),
                   tuple(v for p in per_pass for v in p), share, exact, alongside)


def roofline_ms(roof: dict) -> dict[str, float]:
    """ms per token at the measured bandwidth, per precision (bytes ÷ bandwidth)."""
    bandwidth = (roof.get("bandwidth") or {}).get("read_gb_s")
    by_precision = roof.get("step_bytes_by_precision") or {}
    if not bandwidth:
        return {}
    return {p: b / (bandwidth * 1e9) * 1e3 for p, b in by_precision.items()
            if isinstance(b, int)}


def build(paths: list[PathRun], roof_ms: dict[str, float], *, loads: list, model: str,
          requests: int, repeats: int) -> dict:
    """Pure: the section from the alternated runs (synthetic ones in the tests)."""
    ours = [p for p in paths if p.engine == INFERTOP]
    peers: dict[str, list[PathRun]] = {}
    for p in paths:
        if p.engine == PEER:
            peers.setdefault(p.precision, []).append(p)
    merged = [merge_peer(runs) for runs in peers.values()]
    precisions = precision_rows(paths, roof_ms)
    rows = []
    for p in ours + merged:
        roof = roof_ms.get(family(p.precision))
        median = p.spread.median
        versus = precisions.get(family(p.precision), {})
        rows.append([p.engine, p.name, p.precision, p.config, p.error or fmt_spread(p.spread),
                     fmt_ms(p.p95_ms), fmt_ratio(median / roof if median and roof else None),
                     fmt_ratio(median / versus["peer_ms"]
                               if p.engine == INFERTOP and median and versus.get("peer_ms")
                               else None),
                     fmt_fraction(p.agreement) if p.agreement is not None else NO_DATA])
    observed = []
    for precision, row in precisions.items():
        verdict = ("at or below the peer" if row["ratio_to_peer"] is not None
                   and row["ratio_to_peer"] <= 1 else "slower than the peer")
        observed.append(f"{precision}: infertop's best ({row['best_path']}, {row['best_config']})"
                        f" {fmt_ms(row['best_ms'])}/token vs CTranslate2 "
                        f"{fmt_ms(row['peer_ms'])}/token = {fmt_ratio(row['ratio_to_peer'])} "
                        f"({verdict}); roofline {fmt_ms(row['roofline_ms'])}, infertop "
                        f"{fmt_ratio(row.get('ratio_to_roofline'))} of it, the peer "
                        f"{fmt_ratio(row.get('peer_ratio_to_roofline'))}.")
    if loads:
        observed.append("load average (1 min) while timed: "
                        f"{min(load[0] for load in loads):.2f}–{max(load[0] for load in loads):.2f} on "
                        f"this machine (ratios come from passes alternated in the same minutes)")
    cause = [
        "CTranslate2 runs the whole decode step in C++ over weights it laid out once at load "
        "(packed GEMM operands, int8 weights with per-row scales and int8 GEMMs on "
        "activations it quantizes per step); a PyTorch step, even compiled, calls the "
        "library's kernels through its own dispatch and allocator per operation. On a CPU "
        "infertop's quant=int8 is the same kind of int8 GEMM (docs/engine-vs-peer.md has the "
        "levers tried and the step's profile).",
    ]
    notes = [f"{model}, {requests} requests of {PEER_INPUT_TOKENS} tokens in and "
             f"{PEER_OUTPUT_TOKENS} out (one shape: each compiled path compiles once), batch 1, "
             "greedy, the output length forced (CTranslate2: min_decoding_length = "
             f"max_decoding_length); {repeats} warm passes per path, each infertop pass "
             "followed by one pass of the peer in each compute type of its precision, the order "
             "reversed every other pass; CTranslate2 runs in a process of its own (in one "
             "process its OpenMP runtime beside torch's slows torch's step)",
             "ms/token: (last token − first token) / (n − 1) per request, the median over a "
             "pass's requests; spread: the range over passes; p95 over every warm request",
             f"best path: the fastest of each precision's paths in this run; the lean step is "
             f"{settings_text(LEAN_STEP)} on compiled fullgraph (int8: quant=int8, the "
             "engine's default int8 kernel, or with gemv=inductor int8 weight-only); each "
             "infertop pass alternates with the peer's compute types of its own precision",
             "peer ms/token and × peer: the peer's median over every pass of that compute type "
             "in the run (beside every infertop path of its precision); report.json keeps the "
             "passes beside the best path apart (peer_ms_alongside)",
             "token agreement: against infertop's fp32 eager reference on the same inputs; "
             f"{RANDOM_WEIGHTS_CAVEAT}"]
    table = {"columns": ["engine", "path", "precision", "config", "ms/token", "p95",
                         "× roofline", "× peer (same precision)", "token agreement"],
             "rows": rows}
    return TEMPLATE.section(table=table, observed=observed, root_cause=cause, notes=notes,
                            configs={p.name: p.as_dict() for p in ours + merged},
                            precisions=precisions, chart=chart(ours + merged))


def chart(paths: list[PathRun], width: int = 40) -> list[str]:
    """ms/token as bars, one line a path (the report's chart)."""
    values = [(p.name, p.spread.median) for p in paths if p.spread.median]
    if not values:
        return []
    top, label = max(v for _, v in values), max(len(name) for name, _ in values)
    return [f"{name:<{label}} {'█' * max(1, round(width * v / top))} {fmt_ms(v)}"
            for name, v in values]


def checks(section: dict) -> dict:
    precisions = section.get("precisions") or {}
    if not precisions:
        return {}
    return {"peers_ratio_to_peer": {k: v.get("ratio_to_peer") for k, v in precisions.items()},
            "peers_fp32_ratio_to_roofline": (precisions.get("fp32") or {}).get(
                "ratio_to_roofline")}


EXPERIMENT = OpenLoopExperiment(TEMPLATE, measure, checks, measures_machine=True,
                                estimate_s=lambda plan: 120.0 if plan.quick else 900.0)
