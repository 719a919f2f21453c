"""The peer engine serves from a process of its own: its answers come back over the pipe, its
faults come back as one error while it goes on serving, a peer that cannot start says why, and
closing it ends the child. (CTranslate2 itself is an optional extra: these use a stand-in peer;
tests/bench/test_bench_peers.py runs the real one where it is installed.)"""

from __future__ import annotations

import multiprocessing
import os
from functools import partial

import pytest

from probe.engine.peer_ctranslate2 import PeerResult
from probe.engine.peer_process import PeerProcess


class EchoPeer:
    """Answers with its own process id and the row, so the test sees where it ran."""
    compute_types = ("float32", "int8")

    def __init__(self, fail_on: str = "") -> None:
        self.fail_on = fail_on

    def generate(self, compute_type, row, output_length) -> PeerResult:
        if compute_type == self.fail_on:
            raise ValueError(f"no {compute_type} here")
        return PeerResult(tokens=(os.getpid(), *row, output_length), latency_ms=1.0,
                          first_token_ms=0.5, tpot_ms=0.25)


def cannot_start() -> EchoPeer:
    raise FileNotFoundError("no converted model at /nowhere")


def test_the_peer_answers_from_a_process_of_its_own_and_closes() -> None:
    peer = PeerProcess(partial(EchoPeer))
    try:
        assert peer.compute_types == ("float32", "int8")
        answer = peer.generate("float32", [5, 6, 7], 4)
        assert answer.tokens[0] != os.getpid()
        assert answer.tokens[1:] == (5, 6, 7, 4) and answer.tpot_ms == 0.25
        child = peer._process
    finally:
        peer.close()
    assert not child.is_alive() and child.exitcode == 0


def test_a_fault_in_one_request_is_an_error_and_the_peer_goes_on() -> None:
    peer = PeerProcess(partial(EchoPeer, fail_on="int8"))
    try:
        with pytest.raises(RuntimeError, match="the peer process: ValueError: no int8 here"):
            peer.generate("int8", [1], 2)
        assert peer.generate("float32", [1], 2).tokens[1:] == (1, 2)
    finally:
        peer.close()


def test_a_peer_that_cannot_start_says_why_and_leaves_no_process() -> None:
    with pytest.raises(RuntimeError, match="FileNotFoundError: no converted model at /nowhere"):
        PeerProcess(cannot_start)
    assert not [p for p in multiprocessing.active_children() if p.name == "infertop-peer"]
