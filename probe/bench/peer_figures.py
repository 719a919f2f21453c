"""The peers experiment's figures, torch-free: each path's per-token times over its alternated
passes, and what report.json keeps per precision (`experiments.peers.precisions.<name>`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from probe.common.percentile import percentile
from probe.runs.spread import Spread

INFERTOP, PEER = "infertop", "ctranslate2"


@dataclass(frozen=True)
class PathRun:
    """One path served alternately with the others: infertop under one config, or the peer
    in one compute type. `pass_ms` holds each warm pass's median ms/token; `request_ms` every
    warm request's ms/token; `agreement` the share of tokens equal to the fp32 reference."""
    name: str                          # "best fp32", "ctranslate2 int8", …
    engine: str                        # INFERTOP | PEER
    precision: str                     # "fp32", "int8", "int8_float32", …
    config: str                        # the OptConfig label, or the peer's compute type
    pass_ms: tuple[float, ...] = ()
    request_ms: tuple[float, ...] = ()
    agreement: float | None = None
    exact_match: float | None = None
    alongside: str = ""                # peer passes: the infertop path they alternated with
    error: str | None = None

    @property
    def spread(self) -> Spread:
        return Spread.of(self.pass_ms)

    @property
    def p95_ms(self) -> float | None:
        return percentile(self.request_ms, 95)

    def as_dict(self) -> dict:
        return {"name": self.name, "engine": self.engine, "precision": self.precision,
                "config": self.config, "ms_per_token": self.spread.as_dict(),
                "p95_ms_per_token": self.p95_ms, "pass_ms": list(self.pass_ms),
                "token_agreement": self.agreement, "exact_match": self.exact_match,
                "alongside": self.alongside, "error": self.error}


def agreement(tokens: Sequence[Sequence[int]], reference: Sequence[Sequence[int]]
              ) -> tuple[float | None, float | None]:
    """(share of positions equal to the reference's, share of requests equal throughout),
    over the requests both have."""
    pairs = [(t, r) for t, r in zip(tokens, reference) if r]
    if not pairs:
        return None, None
    same = sum(sum(a == b for a, b in zip(t, r)) for t, r in pairs)
    total = sum(len(r) for _, r in pairs)
    exact = sum(tuple(t) == tuple(r) for t, r in pairs)
    return same / total, exact / len(pairs)


def family(precision: str) -> str:
    """The infertop precision a peer compute type is held against: int8_float32 is int8
    weights with fp32 activations, still int8."""
    return "int8" if precision.startswith("int8") else precision


def precision_rows(paths: Sequence[PathRun], roofline_ms: Mapping[str, float]) -> dict:
    """report.json `precisions`: per peer compute type, the peer's median ms/token over every
    pass it served in the run (beside every infertop path of its family), infertop's fastest
    path of that precision, their ratio (below 1: infertop is faster) and the precision's
    roofline. Over the whole run, not the passes beside the fastest path only: the peer's
    passes moved 15–30 ms over one run here, and those few passes are the ones that happened to
    sit beside it; `peer_ms_alongside` keeps the paired figure."""
    ours = [p for p in paths if p.engine == INFERTOP and p.spread.median is not None]
    median = {id(p): p.spread.median or 0.0 for p in ours}     # every one of them has one
    by_type: dict[str, list[PathRun]] = {}
    for p in paths:
        if p.engine == PEER and p.spread.median is not None:
            by_type.setdefault(p.precision, []).append(p)
    rows: dict = {}
    for precision, runs in by_type.items():
        candidates = [p for p in ours if p.precision == family(precision)]
        if not candidates:
            continue
        best = min(candidates, key=lambda p: median[id(p)])
        best_ms = median[id(best)]
        peer_ms = merge_peer(runs).spread.median
        alongside = next((r.spread.median for r in runs if r.alongside == best.name), None)
        roof = roofline_ms.get(family(precision))
        rows[precision] = {
            "peer_ms": peer_ms, "best_ms": best_ms, "best_config": best.config,
            "best_path": best.name,
            "ratio_to_peer": best_ms / peer_ms if peer_ms else None,
            "peer_passes": sum(len(r.pass_ms) for r in runs),
            "peer_ms_alongside": alongside,
            "ratio_to_peer_alongside": best_ms / alongside if alongside else None,
            "roofline_ms": roof,
            "ratio_to_roofline": best_ms / roof if roof else None,
            "peer_ratio_to_roofline": peer_ms / roof if peer_ms and roof else None}
    return rows


def merge_peer(runs: Sequence[PathRun]) -> PathRun:
    """One compute type's passes across every infertop path it alternated with."""
    first = runs[0]
    agreements = [r.agreement for r in runs if r.agreement is not None]
    exact = [r.exact_match for r in runs if r.exact_match is not None]
    return PathRun(first.name, first.engine, first.precision, first.config,
                   tuple(v for r in runs for v in r.pass_ms),
                   tuple(v for r in runs for v in r.request_ms),
                   agreements[0] if agreements else None, exact[0] if exact else None,
                   "all", next((r.error for r in runs if r.error), None))
