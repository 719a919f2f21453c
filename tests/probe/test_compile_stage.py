"""The stage a running compile is in, read off the compiling thread's stack: checked on made-up
stacks (the nesting rule) and sampled from another thread during a real inductor compile."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest
import torch

from probe.engine.observe.compile_stage import stage_of
from tests.conftest import serve


def stack(*frames: str):
    """A frame chain, innermost first, from "path:function" strings, as stage_of reads it."""
    frame = None
    for where in reversed(frames):
        path, function = where.rsplit(":", 1)
        frame = SimpleNamespace(f_code=SimpleNamespace(co_filename=path, co_name=function),
                                f_back=frame)
    return frame


TORCH = "/venv/lib/python3.11/site-packages/torch/"
DYNAMO = (TORCH + "_dynamo/convert_frame.py:compile_inner", "/app/serve.py:decode")
OUTER_INDUCTOR = (TORCH + "_inductor/compile_fx.py:compile_fx",) + DYNAMO
AOT = (TORCH + "_functorch/aot_autograd.py:aot_module_simplified",) + OUTER_INDUCTOR
INNER_INDUCTOR = (TORCH + "_inductor/compile_fx.py:compile_fx_inner",
                  TORCH + "_functorch/_aot_autograd/graph_compile.py:aot_stage2_inference") + AOT


@pytest.mark.parametrize("frames, stage", [
    ((TORCH + "fx/graph.py:create_node", TORCH + "_dynamo/symbolic_convert.py:run") + DYNAMO,
     "tracing"),
    # inductor's outer entry only wraps AOTAutograd: its pre-grad passes are not its codegen
    ((TORCH + "_inductor/compile_fx.py:run_pre_grad_passes",) + AOT, "aot"),
    ((TORCH + "_inductor/compile_fx.py:partition_fn",
      TORCH + "_functorch/_aot_autograd/graph_compile.py:_aot_stage2a_partition") + AOT, "aot"),
    # dynamo's timing helpers run inside inductor: the innermost stage entry counts
    ((TORCH + "_dynamo/utils.py:dynamo_timed", TORCH + "_inductor/graph.py:codegen")
     + INNER_INDUCTOR, "inductor"),
    (("/usr/lib/python3.11/concurrent/futures/_base.py:result",
      TORCH + "_inductor/async_compile.py:wait") + INNER_INDUCTOR, "kernel compile"),
    # starting the compile workers' pool is not compiling a kernel
    ((TORCH + "_inductor/async_compile.py:warm_pool",) + OUTER_INDUCTOR, "tracing"),
    (("/app/serve.py:decode", "/usr/lib/python3.11/threading.py:run"), None),
    ((), None),
])
def test_the_innermost_stage_entry_on_the_stack_is_the_one_running(frames, stage):
    assert stage_of(stack(*frames)) == stage


@pytest.mark.slow
def test_a_real_inductor_compile_is_seen_going_through_its_stages(make_engine, monkeypatch):
    """Sampled every 10 ms from another thread, as the dashboard's publisher does: a compile
    with inductor's caches off shows tracing, then AOTAutograd, then inductor; never a stage
    once it is over."""
    monkeypatch.setattr(torch._inductor.config, "force_disable_caches", True)
    engine = make_engine("decode=fullgraph", "compile=default", backend="inductor")
    seen: list[str | None] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            running = engine.probe.compiling()
            if running is not None:
                seen.append(running.stage)
            time.sleep(0.01)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        assert serve(engine, [(9, 3)])[0].ok
    finally:
        done.set()
        sampler.join()
    order = [s for i, s in enumerate(seen) if i == 0 or s != seen[i - 1]]
    assert {"tracing", "aot", "inductor"} <= set(seen), order
    assert order.index("tracing") < order.index("aot") < order.index("inductor")
    assert engine.probe.compiling() is None
