"""The peer engine in a process of its own. CTranslate2 ships its own OpenMP runtime beside
torch's; once both have run in one process, torch's batch-1 decode step on t5-small went from
5.7–6.4 to 8.1–9.1 ms/token on the AVX-512 EPYC (docs/results.md), so every figure of a run
that shared the process was a slowed one. A user who picks CTranslate2 runs it alone; here it
runs alone too, asked one request at a time over a pipe while infertop's engine waits, and
infertop's process never imports it."""

from __future__ import annotations

import multiprocessing as mp
import tempfile
from collections.abc import Callable, Sequence
from functools import partial
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Protocol

from probe.engine.peer_ctranslate2 import PeerModel, PeerResult, save_checkpoint

# A start that takes longer than this is a hung child (the t5-small conversion takes seconds).
START_TIMEOUT_S = 600.0


class Peer(Protocol):
    compute_types: tuple[str, ...]

    def generate(self, compute_type: str, row: Sequence[int],
                 output_length: int) -> PeerResult: ...


class PeerProcess:
    """`make_peer` runs in the child (it must pickle: a module-level function or a partial of
    one); `generate` asks the child and returns its result, or raises RuntimeError with the
    child's error, the child still serving."""

    def __init__(self, make_peer: Callable[[], Peer], *,
                 start_timeout_s: float = START_TIMEOUT_S) -> None:
        context = mp.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(make_peer, child),
                                        name="infertop-peer", daemon=True)
        self._process.start()
        child.close()
        try:
            self.compute_types: tuple[str, ...] = self._answer(start_timeout_s, "start")
        except BaseException:
            self.close()
            raise

    def generate(self, compute_type: str, row: Sequence[int], output_length: int) -> PeerResult:
        self._conn.send((compute_type, tuple(row), output_length))
        return self._answer(None, "generate")

    def _answer(self, timeout_s: float | None, what: str):
        if timeout_s is not None and not self._conn.poll(timeout_s):
            raise RuntimeError(f"the peer process did not {what} within {timeout_s:.0f} s")
        try:
            kind, value = self._conn.recv()
        except EOFError:
            raise RuntimeError(f"the peer process ended during {what} (exit code "
                               f"{self._process.exitcode})") from None
        if kind == "error":
            raise RuntimeError(f"the peer process: {value}")
        return value

    def close(self) -> None:
        if self._process.is_alive():
            try:
                self._conn.send(None)
            except OSError:
                pass
            self._process.join(10.0)
            if self._process.is_alive():
                self._process.kill()
                self._process.join()
        self._conn.close()


def _serve(make_peer: Callable[[], Peer], conn: Connection) -> None:
    """The child: build the peer, say which compute types it offers, then answer each request
    until told to stop (None) or the parent goes."""
    try:
        peer = make_peer()
        conn.send(("ready", peer.compute_types))
    except Exception as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    while True:
        try:
            asked = conn.recv()
        except EOFError:
            return
        if asked is None:
            return
        try:
            conn.send(("ok", peer.generate(*asked)))
        except Exception as exc:  # one request's fault never takes the peer down
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


def converted_peer(hf_dir: Path, threads: int) -> Peer:
    """The CTranslate2 peer as the child builds it: the checkpoint converted there, on the
    thread count infertop's engine uses."""
    import torch
    # The converter loads the checkpoint with torch: one thread, so no torch thread pool runs
    # beside the peer's own.
    torch.set_num_threads(1)
    return PeerModel(hf_dir, threads=threads)


class CTranslate2Peer:
    """The model's own weights served by CTranslate2 in a process of its own: saved here as a
    checkpoint into a temporary folder, converted and served there."""

    def __init__(self, model, tokenizer, *, threads: int) -> None:
        self._temp = tempfile.TemporaryDirectory(prefix="infertop-peer-")
        try:
            hf_dir = save_checkpoint(model, tokenizer, Path(self._temp.name))
            self._process = PeerProcess(partial(converted_peer, hf_dir, threads))
        except BaseException:
            self._temp.cleanup()
            raise
        self.compute_types = self._process.compute_types

    def generate(self, compute_type: str, row: Sequence[int], output_length: int) -> PeerResult:
        return self._process.generate(compute_type, row, output_length)

    def close(self) -> None:
        self._process.close()
        self._temp.cleanup()
