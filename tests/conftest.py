"""Shared fixtures: a t5-tiny whose greedy outputs vary (so token comparisons mean something)."""

from __future__ import annotations

import pytest
import torch

from probe.engine import Engine, EngineSettings
from probe.models import LoadedModel, load_model
from probe.options import OptConfig, parse_opts
from probe.requests import EngineRequest


def varied_tiny_model(seed: int = 1) -> LoadedModel:
    """The t5-tiny preset re-drawn with larger weights: the preset's default init makes greedy
    decoding repeat one token, which would let a wrong decoder pass a token comparison."""
    loaded = load_model("t5-tiny")
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in loaded.model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.3)
    return loaded


@pytest.fixture(autouse=True)
def _state_home(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Engine logs (and anything else kept per user) go under the test's tmp_path."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


@pytest.fixture
def make_engine():
    engines: list[Engine] = []

    def make(*opts: str, backend: str = "eager", buckets: tuple[int, ...] = (),
             max_new_tokens: int = 24, keep_tokens: bool = True) -> Engine:
        settings = EngineSettings(model="t5-tiny", device="cpu", bucket_edges=buckets,
                                  max_new_tokens=max_new_tokens, compile_backend=backend,
                                  keep_tokens=keep_tokens)
        engine = Engine(settings, parse_opts(opts), loaded=varied_tiny_model())
        engines.append(engine)
        return engine

    yield make
    for engine in engines:
        engine.close()


def request(engine: Engine, seq: int, input_length: int, output_length: int) -> EngineRequest:
    return EngineRequest(id=f"r{seq}", seq=seq, input_length=input_length,
                         output_length=output_length, arrival_s=engine.clock.now_s())


def serve(engine: Engine, shapes: list[tuple[int, int]], start_seq: int = 0):
    return [engine.serve([request(engine, start_seq + i, length, out)])[0]
            for i, (length, out) in enumerate(shapes)]


def tokens_of(engine: Engine) -> dict[str, list[int]]:
    """Each served request's generated ids, as its record keeps them (keep_tokens)."""
    return {r.id: list(r.tokens) for r in engine.session.freeze().records if r.tokens is not None}


__all__ = ["OptConfig", "request", "serve", "tokens_of", "varied_tiny_model"]
