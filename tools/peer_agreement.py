"""A peer's client records against the session `infertop serve` saved of the same requests,
joined by request id: the client's end-to-end and TTFT minus the server's (the client's clock
brackets the server's, so each difference is ≥ 0), the requests either side missed, the
tokens each side counted. `make peer-check` writes it (tools/peer_check.py)."""

from __future__ import annotations

from dataclasses import dataclass

from probe.analysis.summary import summarize
from probe.common.units import fmt_num
from probe.contract.figures import Summary
from probe.contract.records import RequestRecord
from probe.session_store.peer_imports.peer_run import PeerFile, PeerRequest


@dataclass(frozen=True)
class Gap:
    """One figure's client-minus-server differences over the joined requests, in ms."""
    name: str
    values: tuple[float, ...]

    @property
    def summary(self) -> Summary:
        return summarize(self.values)

    @property
    def below_zero(self) -> int:
        return sum(v < 0 for v in self.values)

    @property
    def min(self) -> float | None:
        return min(self.values) if self.values else None


@dataclass(frozen=True)
class Agreement:
    tool: str
    joined: int
    client_only: tuple[str, ...]        # the server has no record of them
    server_only: tuple[str, ...]        # the client's file does not hold them
    e2e: Gap
    ttft: Gap
    tokens: dict[str, tuple[int, int]]  # "input" / "output" → (client's sum, server's sum)
    tokens_differ: dict[str, int]       # requests whose count differs, each kind

    @property
    def holds(self) -> bool:
        """Every joined request's differences are ≥ 0."""
        return not self.e2e.below_zero and not self.ttft.below_zero


def agreement(peer: PeerFile, served: tuple[RequestRecord, ...]) -> Agreement:
    """Join by id every client request and every served record (a failed one on either side
    counts as joined; its figures are left out of the differences)."""
    client: dict[str, PeerRequest] = {r.id: r for run in peer.runs for r in run.requests}
    server = {r.id: r for r in served}
    joined = [(client[i], server[i]) for i in client if i in server]
    ok = [(c, s) for c, s in joined if c.error is None and s.ok]
    e2e = tuple(c.latency_ms - s.latency_ms for c, s in ok)
    ttft = tuple(c.ttft_ms - s.ttft_ms for c, s in ok
                 if c.ttft_ms is not None and s.ttft_ms is not None)
    return Agreement(
        tool=peer.tool, joined=len(joined),
        client_only=tuple(i for i in client if i not in server),
        server_only=tuple(i for i in server if i not in client),
        e2e=Gap("end-to-end", e2e), ttft=Gap("TTFT", ttft),
        tokens={"input": (sum(c.input_tokens for c, _ in ok), sum(s.input_tokens for _, s in ok)),
                "output": (sum(c.output_tokens for c, _ in ok),
                           sum(s.output_tokens for _, s in ok))},
        tokens_differ={"input": sum(c.input_tokens != s.input_tokens for c, s in ok),
                       "output": sum(c.output_tokens != s.output_tokens for c, s in ok)})


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


def agreement_table(rows: list[Agreement]) -> str:
    """The Markdown table docs/peers.md holds: one row per peer and figure."""
    lines = ["| client | figure | joined, both ok | p50 ms | p95 ms | max ms | min ms | < 0 |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        for gap in (row.e2e, row.ttft):
            s = gap.summary
            lines.append(f"| {row.tool} | client − server {gap.name} | {len(gap.values)} | "
                         f"{_ms(s.p50)} | {_ms(s.p95)} | {_ms(s.max)} | {_ms(gap.min)} | "
                         f"{gap.below_zero} |")
    lines += ["", "| client | requests joined | client only | server only | input tokens "
                  "client / server (requests differing) | output tokens client / server "
                  "(requests differing) |", "|---|---:|---:|---:|---:|---:|"]
    for row in rows:
        tokens = [f"{fmt_num(row.tokens[k][0], 0)} / {fmt_num(row.tokens[k][1], 0)} "
                  f"({row.tokens_differ[k]})" for k in ("input", "output")]
        lines.append(f"| {row.tool} | {row.joined} | {len(row.client_only)} | "
                     f"{len(row.server_only)} | {tokens[0]} | {tokens[1]} |")
    return "\n".join(lines)
