"""The figures that cross to the dashboard inside a LiveView, and to disk inside a session's
summary: plain frozen values. How each is computed is probe/analysis/ (stats, steady_state,
drift, tpot_figure, slo); a view prints these and computes none of them."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from probe.common.units import fmt_ms, fmt_ratio, fmt_s
from probe.contract.records import KVPool


@dataclass(frozen=True)
class Summary:
    p50: float | None = None
    p95: float | None = None
    p99: float | None = None
    mean: float | None = None
    max: float | None = None

    def as_dict(self) -> dict[str, float | None]:
        return asdict(self)


@dataclass(frozen=True)
class CompilePhases:
    """Where compile seconds went, summed over compiles (each split as dynamo timed it); the
    AOTAutograd seconds of compiles served whole from inductor's caches are their loading."""
    tracing_s: float
    aot_s: float
    inductor_s: float
    cache_load_s: float = 0.0

    @property
    def total_s(self) -> float:
        return self.tracing_s + self.aot_s + self.inductor_s + self.cache_load_s

    def parts(self) -> dict[str, float]:
        return {"tracing": self.tracing_s, "aot": self.aot_s, "inductor": self.inductor_s,
                "cache load": self.cache_load_s}

    def split_text(self, total_s: float | None = None) -> str:
        """The parts that took time: "tracing 24.5 s · cache load 1.77 s"; beside a `total_s`
        they do not fill, the rest as `other` (wall-clock compile seconds outside dynamo's timed
        phases: guards, bytecode, waiting for a core), so the line sums to its total."""
        parts = [f"{name} {fmt_s(seconds)}" for name, seconds in self.parts().items() if seconds]
        rest = self.untimed_s(total_s)
        return " · ".join(parts + ([f"other {fmt_s(rest)}"] if rest else []))

    def untimed_s(self, total_s: float | None) -> float:
        """`total_s` less the parts, when the parts leave out more than rounding does."""
        if total_s is None:
            return 0.0
        rest = total_s - self.total_s
        return rest if rest > max(0.01, 0.005 * total_s) else 0.0

    def largest_share(self, total_s: float | None = None) -> str:
        """The largest part with its share: "92% tracing"; of `total_s` when given, `other`
        (split_text's rest) counted as a part."""
        parts = {**self.parts(), "other": self.untimed_s(total_s)}
        whole = self.total_s + parts["other"]
        name = max(parts, key=parts.__getitem__)
        return f"{100 * parts[name] / whole:.0f}% {name}" if whole else "none"


@dataclass(frozen=True)
class DriftStats:
    reference: str
    sampled_requests: int           # requests with both their tokens and a reference
    token_agreement: float          # equal positions / all positions compared
    exact_match: float              # requests whose tokens equal the reference's
    first_divergence: float | None  # median 1-based position of the first differing token,
                                    # over the requests that differ (None: none differ)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class WarmStats:
    """The figures over a set's warm requests (served ones), beside its figures over all."""
    requests: int
    cold: int                   # served requests of the set that were cold
    latency_ms: Summary
    ttft_ms: Summary
    tpot_ms: Summary
    queue_ms: Summary

    @property
    def cold_share(self) -> float | None:
        total = self.requests + self.cold
        return self.cold / total if total else None

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Backlog:
    """The queue a compile left, while it drains."""
    queue_depth: int
    source_config: str           # whose compiles left it
    drain_s: float | None        # at the current capacity and offered load; None: not draining
    compiling: bool              # a compile still runs (the backlog still grows)


@dataclass(frozen=True)
class ConfigEnergy:
    """What the engine's energy ledger kept for one config beside its requests' joules: the
    counter's source, the idle floor (joules between steps) and the seconds it covered, or
    why there is no counter."""
    source: str | None = None
    idle_j: float = 0.0
    idle_s: float = 0.0          # seconds between steps
    busy_s: float = 0.0          # seconds inside steps
    unavailable: str | None = None


# a segment of a session saved before infertop read energy counters, or of a config no engine
# step ran under: nothing was measured, which is not the same as not measurable
NOT_RECORDED = "no energy readings in this session"


@dataclass(frozen=True)
class EnergyStats:
    """A segment's energy (probe/analysis/energy.py), or why it was not measured."""
    source: str | None = None
    joules: float | None = None
    idle_joules: float | None = None
    j_per_token: float | None = None
    j_per_good_token: float | None = None
    avg_power_w: float | None = None
    idle_power_w: float | None = None
    padding_share: float | None = None
    failed_share: float | None = None
    unavailable: str | None = None

    def as_dict(self) -> dict:
        if self.unavailable is not None:
            return {"unavailable": self.unavailable}
        return {k: v for k, v in asdict(self).items() if k != "unavailable"}

    def text(self) -> str:
        """ "energy: 812 J (idle 95.0 J, 4.1 W) · 0.412 J/token · 0.57 J/good token ·
        avg 38.2 W · padding 12% · failed 0% (RAPL package-0)" or the reason."""
        if self.unavailable == NOT_RECORDED:
            return f"energy: {NOT_RECORDED}"
        if self.unavailable is not None:
            return f"energy: not measurable here ({self.unavailable})"

        def num(value: float | None, unit: str) -> str:
            return "n/a" if value is None else f"{value:.3g} {unit}"

        def share(value: float | None) -> str:
            return "n/a" if value is None else f"{100 * value:.0f}%"
        good = ("" if self.j_per_good_token is None
                else f" · {num(self.j_per_good_token, 'J/good token')}")
        return (f"energy: {num(self.joules, 'J')} (idle {num(self.idle_joules, 'J')}, "
                f"{num(self.idle_power_w, 'W')}) · {num(self.j_per_token, 'J/token')}{good} · "
                f"avg {num(self.avg_power_w, 'W')} · padding {share(self.padding_share)} · "
                f"failed {share(self.failed_share)} ({self.source})")

    def short_text(self) -> str:
        """ "0.41 J/token" or "not measurable here (why)" """
        if self.unavailable == NOT_RECORDED:
            return "not recorded"
        if self.unavailable is not None:
            return f"not measurable here ({self.unavailable})"
        if self.j_per_token is None:
            return "no tokens"
        return f"{self.j_per_token:.3g} J/token"


@dataclass(frozen=True)
class SegmentStats:
    config_id: str
    requests: int
    failed: int
    latency_ms: Summary
    ttft_ms: Summary
    tpot_ms: Summary
    queue_ms: Summary
    throughput_rps: float | None
    tokens_per_s: float | None
    compiles: int
    recompiles: int
    compile_s: float
    graph_breaks: int             # break events as dynamo logged them
    graph_break_sites: int        # distinct code locations among them
    graphs: int
    kv_cache_peak_bytes: int
    padding_waste: float | None   # (padded − real) / padded input tokens
    drift: DriftStats | None = None   # tokens against the fp32 eager reference (sampled)
    kv_waste_pct: float | None = None  # 100 · (KV bytes held − used) / held, its requests
    kv_pool: KVPool | None = None     # the paged layout's pool, where there is one
    compile_phases: CompilePhases | None = None   # compile_s split as dynamo timed it
    warm: WarmStats | None = None     # the same figures over its warm requests (steady_state)
    # under the session's SLO (probe/analysis/slo.py); None when it has none
    goodput_rps: float | None = None
    goodput_tokens_per_s: float | None = None
    slo_attainment: float | None = None
    energy: EnergyStats | None = None
    # drift-sampled requests still without their fp32 reference: the engine decodes one only
    # when it is idle, so under a queue that never empties drift stays unknown (and says so)
    drift_waiting: int = 0

    def as_dict(self) -> dict:
        """As saved: every field but drift_waiting (the live view's alone)."""
        saved = asdict(self)
        del saved["drift_waiting"]
        saved["energy"] = None if self.energy is None else self.energy.as_dict()
        return saved


BATCHED = 1.05      # mean rows per step above which a config's requests ran batched


@dataclass(frozen=True)
class ConfigTpot:
    config_id: str
    tpot_ms: float | None       # p50 over `requests`
    requests: int               # the requests it is over
    warm: bool                  # over the warm ones (False: none warm yet, over all)
    limit_ms: float | None      # the roofline it is held against (None: not measured)
    rows: float = 1.0           # mean rows per step (a batch's roofline above BATCHED)

    @property
    def ratio(self) -> float | None:
        """Against the roofline only over warm requests: a request that waited on a compile
        holds the compile's seconds, which no roofline bounds (None until one is warm)."""
        if self.tpot_ms is None or not self.limit_ms or not self.warm:
            return None
        return self.tpot_ms / self.limit_ms

    def scope(self) -> str:
        return (f"warm p50, {self.requests} req" if self.warm else
                f"p50 of {self.requests} req, none warm yet")

    def text(self) -> str:
        """ "c3 TPOT 4.10 ms (warm p50, 40 req) · 2.3× roofline" """
        ratio = self.ratio
        which = f"batch-{self.rows:.1f} roofline" if self.rows > BATCHED else "roofline"
        limit = "" if ratio is None else f" · {fmt_ratio(ratio)} {which}"
        return f"{self.config_id} TPOT {fmt_ms(self.tpot_ms)} ({self.scope()}){limit}"


@dataclass(frozen=True)
class Goodput:
    """The three SLO figures of one set of records."""
    goodput_rps: float | None
    goodput_tokens_per_s: float | None
    slo_attainment: float | None

    def as_dict(self) -> dict[str, float | None]:
        return asdict(self)


NO_GOODPUT = Goodput(None, None, None)
