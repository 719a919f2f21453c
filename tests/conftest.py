"""Shared fixtures: a t5-tiny whose greedy outputs vary (so token comparisons mean something).
torch and the engine are imported where a fixture needs them, not here: a pure test
(`pytest -m pure`, tests/layers.py) loads them only if what it tests does."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

# Two busy cores: no property may fail for being slow (examples are bounded per test instead).
settings.register_profile("infertop", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow,
                                                 HealthCheck.function_scoped_fixture])
settings.load_profile("infertop")

from probe.contract.options import OptConfig, parse_opts
from probe.contract.records import RequestRecord

if TYPE_CHECKING:
    from probe.engine.engine import Engine
    from probe.engine.model.loading import LoadedModel
    from probe.engine.model.requests import EngineRequest


def varied_tiny_model(seed: int = 1) -> LoadedModel:
    """The t5-tiny preset re-drawn with larger weights: the preset's default init makes greedy
    decoding repeat one token, which would let a wrong decoder pass a token comparison."""
    import torch

    from probe.engine.model.loading import load_model
    loaded = load_model("t5-tiny")
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in loaded.model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.3)
    return loaded


# Files that start a local Ray: under `make test`'s workers they run in one, one after another
# (two Ray instances at once on two cores time out starting).
RAY_FILES = frozenset({"test_bench_ray.py", "test_tune_interrupt_and_ray.py", "test_serve_ray.py"})


def worker_group(relative: str) -> str:
    """A test file's worker group, from its path under tests/: its own, or the Ray files' one."""
    return "ray" if Path(relative).name in RAY_FILES else relative


# tryfirst: pytest-xdist reads the groups in its own hook, which would otherwise run first
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with its layer (tests/layers.py): `pytest -m pure` is the fast lane,
    `-m engine`, `-m pilot` and `-m layout` the others. And with its file's worker group
    (`--dist loadgroup`): a file's tests share one worker, so its module fixtures run once.
    Groups are queued longest first (tests/durations.json; `make test` turns off xdist's own
    reorder, by test count): a long file started last would keep one worker busy while the
    other sits idle."""
    from layers import layer_of
    here = Path(__file__).parent
    groups: dict[pytest.Item, str] = {}
    for item in items:
        path = Path(str(item.fspath))
        layer = layer_of(path, list(getattr(item, "fixturenames", ())),
                         item.get_closest_marker("slow") is not None)
        item.add_marker(getattr(pytest.mark, layer))
        groups[item] = worker_group(str(path.relative_to(here)))
        item.add_marker(pytest.mark.xdist_group(groups[item]))
    seconds = json.loads((here / "durations.json").read_text())["seconds"]
    cost: dict[str, float] = {}
    for name, value in seconds.items():
        cost[worker_group(name)] = cost.get(worker_group(name), 0.0) + value
    items.sort(key=lambda item: -cost.get(groups[item], 0.0))      # stable: file order kept


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """`-m LAYER` alone does not import the files that cannot hold a test of that layer."""
    from layers import LAYERS, may_hold
    lane = (config.option.markexpr or "").strip()
    if (lane in LAYERS and collection_path.suffix == ".py"
            and collection_path.name.startswith("test_")
            and not may_hold(collection_path, lane)):
        return True
    return None


@pytest.fixture(autouse=True)
def _state_home(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Engine logs (and anything else kept per user) go under the test's tmp_path."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


@pytest.fixture
def make_engine():
    from probe.engine.engine import Engine, EngineSettings
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
    from probe.engine.model.requests import EngineRequest
    return EngineRequest(id=f"r{seq}", seq=seq, input_length=input_length,
                         output_length=output_length, arrival_s=engine.clock.now_s())


def serve(engine: Engine, shapes: list[tuple[int, int]], start_seq: int = 0):
    return [engine.serve([request(engine, start_seq + i, length, out)])[0]
            for i, (length, out) in enumerate(shapes)]


def synthetic_record(id: str, seq: int, *, latency_ms: float, config_id: str = "c1",
                     input_tokens: int = 10, padded_tokens: int | None = None,
                     output_tokens: int = 5, start_s: float | None = None, kv_bytes: int = 0,
                     stall_ms: float = 0.0, error: str | None = None) -> RequestRecord:
    """A served (or failed) record with consistent marks, for figures tested without a model:
    it starts at `start_s` (default: its seq), its tokens evenly spread over its latency."""
    start = float(seq) if start_s is None else start_s
    end = start + latency_ms / 1000
    first = start + latency_ms / 1000 / output_tokens
    return RequestRecord(
        id=id, seq=seq, config_id=config_id, input_tokens=input_tokens,
        padded_tokens=padded_tokens or input_tokens, output_tokens=output_tokens,
        arrival_s=start, start_s=start, first_token_s=first, end_s=end, queue_ms=0.0,
        compile_stall_ms=stall_ms, encoder_ms=1.0, decoder_ms=latency_ms - 1.0,
        ttft_ms=(first - start) * 1000,
        tpot_ms=(end - first) * 1000 / (output_tokens - 1) if output_tokens > 1 else None,
        latency_ms=latency_ms, kv_cache_bytes=kv_bytes, kv_cache_used_bytes=kv_bytes,
        kv_self_attention_bytes=kv_bytes, kv_cross_attention_bytes=0, error=error,
        last_token_s=end)


def tokens_of(engine: Engine) -> dict[str, list[int]]:
    """Each served request's generated ids, as its record keeps them (keep_tokens)."""
    return {r.id: list(r.tokens) for r in engine.session.freeze().records if r.tokens is not None}


@pytest.fixture(scope="session")
def local_ray():
    """One local Ray instance with two slots for the whole run, shared by every file that uses
    one: Ray does not start again in a process that shut it down, so a second file's own
    instance would have to skip in a one-process run. Its session files and the auth token it
    writes under HOME go to a short temporary folder (socket paths must stay under 107
    characters); HOME is the test's again once Ray's processes have started with it (a task
    sees it as HOME). Yields Ray and that folder."""
    ray = pytest.importorskip("ray")
    from probe.runs.cluster import SLOT
    home = tempfile.mkdtemp(prefix="ray", dir="/tmp")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", home)
        patch.setenv("RAY_TMPDIR", home)
        patch.delenv("RAY_ADDRESS", raising=False)
        ray.init(address="local", num_cpus=2, include_dashboard=False, resources={SLOT: 2},
                 log_to_driver=False)
    try:
        yield ray, Path(home)
    finally:
        ray.shutdown()
        shutil.rmtree(home, ignore_errors=True)


def by_value(ray, module_name: str) -> None:
    """A test module's functions reach Ray's workers by value (they cannot import tests/)."""
    ray.cloudpickle.register_pickle_by_value(sys.modules[module_name])


__all__ = ["OptConfig", "request", "serve", "synthetic_record", "tokens_of", "varied_tiny_model"]
