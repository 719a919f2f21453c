"""What `tune` tries, one change at a time, in the seed study's order — KV cache, compile, the
graph-break-free decode, planner buckets, prewarm, precision and quantization, batching and KV
layout, the lean-step levers — and how the baseline's own session reorders them."""

from __future__ import annotations

from dataclasses import dataclass

from probe.common.errors import BadInput
from probe.contract.figures import SegmentStats
from probe.contract.options import OPTION_BY_KEY, OptConfig

SEED_ORDER: tuple[tuple[str, str], ...] = (
    ("kv_cache", "on"),
    ("compile", "default"),
    ("decode", "fullgraph"),
    ("bucketing", "on"),
    ("prewarm", "on"),
    ("precision", "bf16"),
    ("quant", "int8"),
    ("batching", "dynamic"),
    ("batching", "continuous"),
    ("kv_layout", "paged"),
    ("wrapper", "cpp"),
    ("guards", "lean"),
    ("attention", "inductor"),
)
DRIFTING = ("precision", "quant")        # changes the tokens: kept only within --max-drift


@dataclass(frozen=True)
class Candidate:
    key: str
    value: str
    hint: str = ""          # why the session's data put it where it is ("" : the seed's order)

    @property
    def text(self) -> str:
        return f"{self.key}={self.value}"


def ordered(baseline: SegmentStats | None) -> list[Candidate]:
    """The seed's order, with the changes the baseline's data points at moved to the front
    (each says why); the rest keep their order."""
    hints: dict[tuple[str, str], str] = {}
    if baseline is not None:
        ttft, tpot = baseline.ttft_ms.p50, baseline.tpot_ms.p50
        queue, latency = baseline.queue_ms.p50, baseline.latency_ms.p50
        first_token = None if ttft is None else ttft - (queue or 0.0)   # its service alone
        if tpot and first_token and tpot > first_token:
            # with a KV cache a later step costs no more than the first token's whole service
            # (encoder and first step); more means each step recomputes the prefix
            hints[("kv_cache", "on")] = (f"a later token costs more than the first token's "
                                         f"whole service (tpot p50 {tpot:.0f} ms vs "
                                         f"{first_token:.0f} ms)")
        if queue and latency and queue > 0.5 * latency:
            share = f"{100 * queue / latency:.0f}% of the p50 latency is queueing"
            hints[("batching", "dynamic")] = share
            hints[("batching", "continuous")] = share
        if baseline.recompiles:
            hints[("bucketing", "on")] = f"{baseline.recompiles} recompiles: shapes vary"
        if baseline.graph_break_sites:
            hints[("decode", "fullgraph")] = f"{baseline.graph_break_sites} graph-break sites"
        if baseline.padding_waste and baseline.padding_waste > 0.3:
            hints.setdefault(("bucketing", "on"), f"{100 * baseline.padding_waste:.0f}% of "
                                                  "the input tokens are padding")
    # The KV cache stays first whatever the data says: without it each step recomputes the
    # prefix, and every other change would be measured against that (a queue, in particular,
    # is what a slow step makes, and would otherwise point at batching first).
    first = [Candidate(*SEED_ORDER[0], hints.pop(SEED_ORDER[0], ""))]
    pointed = [Candidate(k, v, hints[(k, v)]) for k, v in SEED_ORDER[1:] if (k, v) in hints]
    rest = [Candidate(k, v) for k, v in SEED_ORDER[1:] if (k, v) not in hints]
    return first + pointed + rest


def applied(options: OptConfig, candidate: Candidate) -> tuple[OptConfig | None, str]:
    """The options with the change, or None and why it does not apply to them."""
    if getattr(options, candidate.key) == candidate.value:
        return None, f"already {candidate.text}"
    if candidate.key == "prewarm":
        return None, ("every tune run is measured warm (its shapes compiled before the "
                      "replay), so prewarm changes only the cold start, which bench E1 measures")
    if OPTION_BY_KEY[candidate.key].needs_compile and not options.compiled:
        return None, f"{candidate.key} needs compile, and compile is off"
    if candidate.key == "kv_layout" and options.batching != "continuous":
        return None, "kv_layout needs batching=continuous"
    try:
        return options.with_option(candidate.key, candidate.value), ""
    except BadInput as exc:
        return None, str(exc)


def opt_line(options: OptConfig) -> str:
    """The options that differ from the defaults, as flags to paste: `--opt k=v --opt k=v`."""
    label = options.label()
    return "" if label == "baseline" else " ".join(f"--opt {pair}" for pair in label.split())
