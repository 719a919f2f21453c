"""compile_cache=on: a restart of the same config loads its compiled functions instead of
tracing them, serves the same tokens, misses on any change and recompiles a bad file."""

from __future__ import annotations

import logging

import pytest
import torch

from probe.contract.options import parse_opts
from probe.engine.compile_cache import (
    CachedCompile,
    ConfigStore,
    CorruptCacheFile,
    cache_root,
    read_entry,
    write_entry,
)
from probe.engine.compile_cache_key import ConfigKey, call_signature, config_key, weights_digest
from probe.engine.engine import Engine, EngineSettings
from tests.conftest import serve, varied_tiny_model

CACHED = ("compile=default", "decode=fullgraph", "compile_cache=on")
SHAPES = [(12, 6), (20, 5)]


@pytest.fixture
def restart(tmp_path, monkeypatch):
    """Engines over one state folder, each as a restart would start it (dynamo reset)."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    engines: list[Engine] = []

    def start(*opts: str, backend: str = "inductor", seed: int = 1) -> Engine:
        settings = EngineSettings(model="t5-tiny", device="cpu", max_new_tokens=8,
                                  compile_backend=backend, keep_tokens=True)
        engine = Engine(settings, parse_opts(opts), loaded=varied_tiny_model(seed))
        engines.append(engine)
        return engine

    yield start
    for engine in engines:
        engine.close()


def _tokens(records) -> list:
    return [r.tokens for r in records]


def _events(engine: Engine):
    return [e for e in engine.session.freeze().events if e.kind in ("compile", "recompile")]


def _unique_graphs() -> int:
    return int(torch._dynamo.utils.counters["stats"]["unique_graphs"])


@pytest.mark.slow
def test_a_restart_loads_instead_of_tracing_and_serves_the_same_tokens(restart, caplog):
    first = restart(*CACHED)
    compiled = serve(first, SHAPES)
    assert all(e.from_cache is False for e in _events(first))
    assert {e.function for e in _events(first)} >= {"encode", "prefill_step", "decode_step"}
    files = sorted(p.name for p in cache_root().rglob("*.bin"))
    assert len(files) == 6          # three functions, two input lengths

    eager = serve(restart("decode=fullgraph"), SHAPES)
    graphs_before = _unique_graphs()
    with caplog.at_level(logging.INFO, logger="probe.engine.compile_cache"):
        second = restart(*CACHED)
        restarted = serve(second, SHAPES)
    assert _tokens(restarted) == _tokens(compiled) == _tokens(eager)
    assert _unique_graphs() == graphs_before          # dynamo traced nothing on the restart
    events = _events(second)
    assert events and all(e.from_cache is True for e in events)
    assert len(events) == len(files)
    assert sum("loaded from" in r.getMessage() for r in caplog.records) == len(files)
    assert restarted[0].compile_stall_ms > 0          # the load is the first request's wait


@pytest.mark.slow
def test_a_changed_option_or_model_misses_and_a_corrupt_file_recompiles(restart, caplog):
    """On dynamo's eager backend, whose graphs save too: tracing without inductor's compile."""
    def restart_eager(*opts, seed=1):
        return restart(*opts, backend="eager", seed=seed)

    serve(restart_eager(*CACHED), SHAPES[:1])
    folders = {p.parent for p in cache_root().rglob("*.bin")}
    assert len(folders) == 1

    lean = restart_eager(*CACHED, "guards=lean")
    serve(lean, SHAPES[:1])
    assert all(e.from_cache is False for e in _events(lean))
    other_model = restart_eager(*CACHED, seed=2)
    serve(other_model, SHAPES[:1])
    assert all(e.from_cache is False for e in _events(other_model))
    assert len({p.parent for p in cache_root().rglob("*.bin")}) == 3

    (folder,) = folders
    encode = next(folder.glob("encode-*.bin"))
    data = bytearray(encode.read_bytes())
    data[-100] ^= 0xFF                                # one flipped byte
    encode.write_bytes(bytes(data))
    prefill = next(folder.glob("prefill_step-*.bin"))
    decode = next(folder.glob("decode_step-*.bin"))
    prefill.write_bytes(decode.read_bytes())          # a valid file that is not this function's
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="probe.engine.compile_cache"):
        again = restart_eager(*CACHED)
        served = serve(again, SHAPES[:1])
    reference = serve(restart("decode=fullgraph"), SHAPES[:1])
    assert _tokens(served) == _tokens(reference)
    by_function = {e.function: e.from_cache for e in _events(again)}
    assert by_function == {"encode": False, "prefill_step": False, "decode_step": True}
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 2
    assert any(encode.name in w and "checksum" in w for w in warnings)
    assert any(prefill.name in w for w in warnings)
    assert read_entry(encode)                         # rewritten whole by the recompile


def test_a_function_that_cannot_be_saved_runs_through_plain_compile(tmp_path, caplog):
    class Unsavable:
        calls = 0

        def aot_compile(self, example):
            raise RuntimeError("does not implement SerializableCallable")

        def __call__(self, *args):
            self.calls += 1
            return args[0] + 1

    def step(x):
        return x + 1

    compiled = Unsavable()
    key = ConfigKey({"test": 1})
    wrapped = CachedCompile(step, compiled, ConfigStore(key, tmp_path))
    with caplog.at_level(logging.INFO, logger="probe.engine.compile_cache"):
        assert wrapped(torch.ones(2)).tolist() == [2.0, 2.0]
        assert wrapped(torch.ones(3)).tolist() == [2.0, 2.0, 2.0]
    assert compiled.calls == 2
    assert not list(tmp_path.rglob("*.bin"))
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "cannot be compiled ahead of time" in lines[0]


def test_the_key_changes_with_what_changes_the_code():
    loaded = varied_tiny_model()
    model, device = loaded.model, torch.device("cpu")
    weights = weights_digest(model)
    base = parse_opts(CACHED)

    def digest(options=base, weights=weights, backend="inductor") -> str:
        return config_key(model, weights, options, backend=backend, device=device).digest

    assert digest() == digest()
    assert digest(base.with_option("compile_cache", "off")) == digest()   # the switch itself
    for key, value in [("freezing", "on"), ("guards", "lean"), ("compile", "max-autotune"),
                       ("precision", "bf16"), ("attention", "inductor")]:
        assert digest(base.with_option(key, value)) != digest(), key
    assert digest(backend="aot_eager") != digest()
    assert weights_digest(varied_tiny_model(seed=2).model) != weights
    assert digest(weights=weights_digest(varied_tiny_model(seed=2).model)) != digest()


def test_the_call_signature_tells_shapes_and_values_apart():
    a, b = torch.zeros(1, 12), torch.zeros(1, 20)
    assert call_signature((a, 3)) == call_signature((torch.ones(1, 12), 3))
    assert call_signature((a, 3)) != call_signature((b, 3))
    assert call_signature((a, 3)) != call_signature((a, 4))
    assert call_signature((a,)) != call_signature((a.to(torch.bfloat16),))
    assert call_signature((a,)) != call_signature((torch.zeros(12, 1).t(),))    # strides


def test_a_cache_file_is_checked_before_it_is_read(tmp_path):
    path = tmp_path / "entry.bin"
    write_entry(path, b"payload" * 100)
    assert read_entry(path) == b"payload" * 100
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptCacheFile, match="checksum"):
        read_entry(path)
    path.write_bytes(data[:10])
    with pytest.raises(CorruptCacheFile):
        read_entry(path)
