"""E1's cold start from scratch and from the compile cache: the same config started twice, each
time in a fresh process, as a restart would.

The first process starts with an empty state folder and an empty TORCHINDUCTOR_CACHE_DIR, so it
traces, lowers and compiles every kernel (compile_cache=on saves what it compiled); the second
starts over the folders the first left and loads. Both serve the same first request; its
latency is the cold start. In-process runs could not show this: a second engine in the same
process finds inductor's kernels already loaded in memory.

Run as `python -m probe.runs.cold_start MODEL OPTS INPUT OUTPUT THREADS BACKEND EDGES` it is
the child: one engine, one request, one JSON line on stdout (third-party output: stderr, which
the parent keeps for the error line only). A pair alone: tools/cold_start_pair.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from probe.contract.options import parse_opts

CHILD_TIMEOUT_S = 1800


@dataclass(frozen=True)
class ColdStartFigures:
    """One config's first request in a fresh process: from scratch, then from the cache."""
    options: str                        # the config, as `--opt` spells it
    scratch_ms: float                   # the first request's latency, everything compiled
    cache_ms: float                     # the same, on a restart over the cache
    scratch_compile_s: float            # compile seconds inside it (the probe's count)
    cache_compile_s: float              # seconds loading from the cache instead
    scratch_process_s: float            # the child's wall time: imports, model, the request
    cache_process_s: float
    loaded: int                         # compile events served from the cache on the restart
    compiled_on_restart: int            # and those that compiled anyway (should be 0)
    traced_on_restart: int              # graphs dynamo traced in the restart (should be 0)
    tokens_equal: bool                  # the restart generated the scratch run's tokens
    error: str | None = None            # why the pair could not be measured

    @classmethod
    def failed(cls, options: str, error: str) -> ColdStartFigures:
        return cls(options, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0, 0, 0, False, error)

    @property
    def ratio(self) -> float | None:
        return self.cache_ms / self.scratch_ms if self.scratch_ms else None

    def as_dict(self) -> dict:
        return {**asdict(self), "ratio": self.ratio}


def _child_command(model: str, options: str, input_length: int, output_length: int,
                   threads: int, backend: str, edges: tuple[int, ...]) -> list[str]:
    return [sys.executable, "-m", "probe.runs.cold_start", model, options, str(input_length),
            str(output_length), str(threads), backend, ",".join(map(str, edges))]


def _run_child(command: list[str], env: dict[str, str]) -> dict:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True,
                          timeout=CHILD_TIMEOUT_S)
    if done.returncode != 0:
        tail = " ".join(done.stderr.split()[-40:])
        raise RuntimeError(f"cold-start child exited {done.returncode}: {tail}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["process_s"] = time.perf_counter() - started
    return result


def measure_pair(model: str, options: str, *, input_length: int, output_length: int,
                 threads: int = 0, backend: str = "inductor",
                 edges: tuple[int, ...] = ()) -> ColdStartFigures:
    """Scratch, then restart, over one fresh state folder and inductor cache (removed after)."""
    command = _child_command(model, options, input_length, output_length, threads, backend,
                             edges)
    repo = str(Path(__file__).resolve().parents[2])
    with tempfile.TemporaryDirectory(prefix="infertop-coldstart-") as folder:
        env = {**os.environ, "XDG_STATE_HOME": str(Path(folder) / "state"),
               "TORCHINDUCTOR_CACHE_DIR": str(Path(folder) / "inductor"),
               "PYTHONPATH": os.pathsep.join(filter(None, [repo, os.environ.get("PYTHONPATH")]))}
        scratch = _run_child(command, env)
        cache = _run_child(command, env)
    return ColdStartFigures(
        options=options, scratch_ms=scratch["first_request_ms"],
        cache_ms=cache["first_request_ms"], scratch_compile_s=scratch["compile_s"],
        cache_compile_s=cache["compile_s"], scratch_process_s=scratch["process_s"],
        cache_process_s=cache["process_s"], loaded=cache["from_cache"],
        compiled_on_restart=cache["compiled"], traced_on_restart=cache["dynamo_graphs"],
        tokens_equal=scratch["tokens"] == cache["tokens"])


def _child(argv: list[str]) -> None:
    model, options, input_length, output_length, threads, backend, edges = argv
    import torch._dynamo.utils

    from probe.engine.engine import Engine, EngineSettings
    from probe.engine.model.requests import EngineRequest
    settings = EngineSettings(
        model=model, device="cpu", max_new_tokens=int(output_length), compile_backend=backend,
        keep_tokens=True, threads=int(threads) or None,
        bucket_edges=tuple(int(e) for e in edges.split(",") if e))
    engine = Engine(settings, parse_opts(options.split()))
    request = EngineRequest(id="cold", seq=0, input_length=int(input_length),
                            output_length=int(output_length), arrival_s=engine.clock.now_s())
    (record,) = engine.serve([request])
    events = [e for e in engine.session.freeze().events if e.kind in ("compile", "recompile")]
    engine.close()
    print(json.dumps({"first_request_ms": record.latency_ms,
                      "compile_s": record.compile_stall_ms / 1000,
                      "from_cache": sum(e.from_cache is True for e in events),
                      "compiled": sum(e.from_cache is not True for e in events),
                      "tokens": list(record.tokens or ()),
                      "dynamo_graphs": int(torch._dynamo.utils.counters["stats"]["unique_graphs"])}))


if __name__ == "__main__":     # the child E1 starts (measure_pair)
    _child(sys.argv[1:])
