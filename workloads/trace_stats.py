"""The numbers `infertop trace stats` prints, computed in one place from the raw requests.

Keys of the JSON object:
  requests                 number of requests
  duration_s               last timestamp - first timestamp, seconds
  rate_rps                 mean arrival rate = (requests - 1) / duration_s, i.e. 1 / mean gap;
                           null when duration_s is 0
  interarrival_cv          std / mean of the gaps between consecutive arrivals (population std,
                           numpy's default ddof=0); 1 for Poisson, > 1 bursty; null if undefined
  input, output            {p50, p90, p99, max} of token lengths; percentiles by numpy's default
                           (linear) method
  distinct_input_lengths   number of different input lengths (shapes without bucketing)
  buckets                  the K edges that pad the fewest tokens (exact; K = --buckets)
  padding_waste            padding tokens / padded tokens with those buckets, a fraction 0..1
  padding_waste_pct        the same in percent
  distinct_shapes_after    how many of the edges are used (= shapes to compile)
  real_tokens, padded_tokens  input tokens before / after padding to the buckets
  powers_of_two            the same figures ({buckets, padding_waste, padding_waste_pct,
                           padded_tokens, distinct_shapes}) for power-of-two edges
  optimal_same_shapes      the exact optimum with as many edges as powers of two use
  padded_tokens_saved_vs_powers_of_two_pct  how many fewer tokens the K-bucket plan pads
                           than powers of two, as a % of the powers-of-two padded tokens
                           (negative when K buckets pad more than the powers of two)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from probe.common.percentile import percentiles
from workloads.buckets import BucketPlan, plan_buckets, powers_of_two_plan
from workloads.trace_records import Trace

PERCENTILES = (50, 90, 99)


def trace_stats(trace: Trace, *, buckets: int = 4) -> dict[str, Any]:
    if not trace.requests:
        raise ValueError("empty trace")
    timestamps_s = np.asarray(trace.timestamps_ms(), dtype=np.float64) / 1000.0
    inputs = np.asarray(trace.input_lengths(), dtype=np.int64)
    outputs = np.asarray(trace.output_lengths(), dtype=np.int64)
    duration_s = float(timestamps_s[-1] - timestamps_s[0])
    gaps = np.diff(timestamps_s)
    rate = (len(timestamps_s) - 1) / duration_s if duration_s > 0 else None
    cv = float(gaps.std() / gaps.mean()) if gaps.size and gaps.mean() > 0 else None
    plan = plan_buckets(inputs, buckets)
    powers = powers_of_two_plan(inputs)
    same_shapes = plan_buckets(inputs, powers.distinct_shapes_after)
    saved = 100.0 * (powers.padded_tokens - plan.padded_tokens) / powers.padded_tokens
    return {
        "trace": trace.name,
        "source": trace.source,
        "requests": len(trace.requests),
        "duration_s": duration_s,
        "rate_rps": rate,
        "interarrival_cv": cv,
        "input": _spread(inputs),
        "output": _spread(outputs),
        "distinct_input_lengths": int(np.unique(inputs).size),
        "buckets": list(plan.edges),
        "padding_waste": plan.waste_fraction,
        "padding_waste_pct": plan.waste_pct,
        "distinct_shapes_after": plan.distinct_shapes_after,
        "real_tokens": plan.real_tokens,
        "padded_tokens": plan.padded_tokens,
        "powers_of_two": _plan_dict(powers),
        "optimal_same_shapes": _plan_dict(same_shapes),
        "padded_tokens_saved_vs_powers_of_two_pct": saved,
    }


def _spread(values: np.ndarray) -> dict[str, float | int]:
    p50, p90, p99 = percentiles(values, PERCENTILES) or (0.0, 0.0, 0.0)
    return {"p50": p50, "p90": p90, "p99": p99, "max": int(values.max())}


def _plan_dict(plan: BucketPlan) -> dict[str, Any]:
    return {
        "buckets": list(plan.edges),
        "padding_waste": plan.waste_fraction,
        "padding_waste_pct": plan.waste_pct,
        "padded_tokens": plan.padded_tokens,
        "distinct_shapes": plan.distinct_shapes_after,
    }


def format_stats(stats: dict[str, Any], k: int) -> str:
    """The human-readable form of trace_stats()."""

    def opt(value: float | None, fmt: str) -> str:
        return "n/a" if value is None else format(value, fmt)

    def spread(d: dict[str, Any]) -> str:
        return f"p50 {d['p50']:g}  p90 {d['p90']:g}  p99 {d['p99']:g}  max {d['max']}"

    powers = stats["powers_of_two"]
    same = stats["optimal_same_shapes"]
    saved = stats["padded_tokens_saved_vs_powers_of_two_pct"]
    verdict = f"pads {saved:.1f}% fewer tokens than" if saved >= 0 else f"pads {-saved:.1f}% more tokens than"
    same_saved = 100.0 * (powers["padded_tokens"] - same["padded_tokens"]) / powers["padded_tokens"]
    rows = [
        ("trace", f"{stats['trace']} ({stats['source']})"),
        ("requests", str(stats["requests"])),
        ("duration", f"{stats['duration_s']:.1f} s"),
        ("mean rate", f"{opt(stats['rate_rps'], '.3f')} rps"),
        ("burstiness", f"{opt(stats['interarrival_cv'], '.2f')} (CV of inter-arrival gaps; 1 = Poisson)"),
        ("input tokens", spread(stats["input"])),
        ("output tokens", spread(stats["output"])),
        ("distinct inputs", f"{stats['distinct_input_lengths']} shapes without buckets"),
        (f"best {k} buckets", f"{','.join(map(str, stats['buckets']))}: padding waste "
         f"{stats['padding_waste_pct']:.1f}%, {stats['distinct_input_lengths']} -> "
         f"{stats['distinct_shapes_after']} shapes"),
        ("powers of two", f"{','.join(map(str, powers['buckets']))}: padding waste "
         f"{powers['padding_waste_pct']:.1f}%, {powers['distinct_shapes']} shapes used"),
        ("", f"the best {k} buckets {verdict} powers of two"),
        (f"best {same['distinct_shapes']} buckets", f"{','.join(map(str, same['buckets']))}: padding waste "
         f"{same['padding_waste_pct']:.1f}% (same shape count as powers of two; "
         f"{same_saved:.1f}% fewer padded tokens)"),
    ]
    return "\n".join(f"{label:<19}{value}" for label, value in rows)
