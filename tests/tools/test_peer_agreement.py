"""The join `make peer-check` makes (tools/peer_agreement.py): the files
AIPerf and guidellm wrote driving `infertop serve` against the session the server saved of
the same requests (tests/fixtures/peers/), and the join recomputed here from the raw JSON
without the importers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from probe.session_store.peer_imports import read_peer_file
from probe.session_store.peer_imports.peer_run import PeerFile, PeerRequest, PeerRun
from probe.session_store.snapshot import read_document, saved_session
from tools.peer_agreement import agreement, agreement_table

FIXTURES = Path(__file__).parent.parent / "fixtures" / "peers"
RUNS = {"aiperf": FIXTURES / "aiperf" / "profile_export.jsonl",
        "guidellm": FIXTURES / "guidellm" / "benchmarks.json"}


def _served(peer: str) -> dict:
    return read_document(FIXTURES / f"served-{peer}.json")


def _raw_client(peer: str) -> dict[str, tuple[float, float | None]]:
    """id → (client e2e ms, client TTFT ms), read from the tool's JSON by hand."""
    found = {}
    if peer == "aiperf":
        for line in RUNS[peer].read_text().splitlines():
            record = json.loads(line)
            meta, ttft = record["metadata"], record["metrics"].get("time_to_first_token")
            found[meta["x_request_id"]] = ((meta["request_end_ns"] - meta["request_start_ns"])
                                           / 1e6, ttft and ttft["value"])
    else:
        for request in json.loads(RUNS[peer].read_text())["benchmarks"][0]["requests"][
                "successful"]:
            timings = request["info"]["timings"]
            found[request["response_id"]] = (
                (timings["request_end"] - timings["request_start"]) * 1e3,
                request["time_to_first_token_ms"])
    return found


@pytest.mark.parametrize("peer", list(RUNS))
def test_every_request_joins_and_the_client_brackets_the_server(peer) -> None:
    served = saved_session(_served(peer)).records
    client = read_peer_file(RUNS[peer])
    joined = agreement(client, served)
    assert joined.joined == len(client.runs[0].requests) > 0
    assert joined.client_only == ()
    # guidellm's report leaves out the request that finished last (the server served it whole)
    last = max(r.end_s for r in served)
    assert len(joined.server_only) == (0 if peer == "aiperf" else 1)
    assert all(r.end_s == last for r in served if r.id in joined.server_only)
    assert joined.holds, (joined.e2e.min, joined.ttft.min)
    assert len(joined.e2e.values) == joined.joined
    assert joined.tokens["input"][0] == joined.tokens["input"][1]


@pytest.mark.parametrize("peer", list(RUNS))
def test_the_table_equals_a_join_made_without_the_importer(peer) -> None:
    served = {r["id"]: r for r in _served(peer)["requests"]}
    raw = _raw_client(peer)
    e2e = [raw[i][0] - served[i]["latency_ms"] for i in raw]
    ttft = [raw[i][1] - served[i]["ttft_ms"] for i in raw if raw[i][1] is not None]
    joined = agreement(read_peer_file(RUNS[peer]), saved_session(_served(peer)).records)
    assert sorted(joined.e2e.values) == pytest.approx(sorted(e2e))
    assert sorted(joined.ttft.values) == pytest.approx(sorted(ttft))
    assert joined.e2e.summary.p95 == pytest.approx(float(np.percentile(e2e, 95)))
    table = agreement_table([joined])
    assert f"{np.percentile(e2e, 50):.1f}" in table and f"{max(ttft):.1f}" in table


def _client(*ids: str, latency: float = 10.0) -> PeerFile:
    requests = tuple(PeerRequest(i, 0.0, latency, 5.0, 1.0, 3, 4) for i in ids)
    return PeerFile("test", None, "x", None, (PeerRun("r", requests),), {}, True)


def test_misses_either_side_and_a_negative_difference_are_reported() -> None:
    served = saved_session(_served("aiperf")).records
    first, second = served[0], served[1]
    peer = _client(first.id, "never-served", latency=first.latency_ms - 1.0)
    joined = agreement(peer, (first, second))
    assert joined.client_only == ("never-served",)
    assert joined.server_only == (second.id,)
    assert joined.e2e.below_zero == 1 and not joined.holds
