"""The static decode loop's rules for CUDA graphs, checked on a CPU: every step is marked as a
new CUDA-graph step, and nothing a compiled function returns is kept past the next call without
a copy. The fake `wrap` below behaves as a replayed CUDA graph does: each call writes its
output into the same buffer, which the next call overwrites."""

from __future__ import annotations

import torch

from probe.contract.options import OptConfig
from probe.engine.decode.static_loop import StaticGreedyDecoder
from probe.engine.switchboard import HF_GENERATE_GRAPHS_REFUSED, Switchboard
from tests.conftest import varied_tiny_model


def graph_like(fn):
    """A function whose every output lands in one static buffer per output shape."""
    buffers: dict[tuple, torch.Tensor] = {}

    def replay(*args):
        out = fn(*args)
        buffer = buffers.setdefault((out.shape, out.dtype), torch.empty_like(out))
        buffer.copy_(out)
        return buffer
    return replay


def test_outputs_are_copied_out_and_each_step_is_marked(monkeypatch):
    loaded = varied_tiny_model()
    model = loaded.model
    ids = torch.randint(3, model.config.vocab_size, (1, 9), generator=torch.Generator().manual_seed(4))
    mask = torch.ones_like(ids)
    with torch.inference_mode():
        plain = StaticGreedyDecoder(model, max_new_tokens=12, use_cache=True,
                                    wrap=lambda fn: fn).generate(ids, mask, 12)
        marks = []
        monkeypatch.setattr(torch.compiler, "cudagraph_mark_step_begin",
                            lambda: marks.append(1))
        graphed = StaticGreedyDecoder(model, max_new_tokens=12, use_cache=True,
                                      wrap=graph_like).generate(ids, mask, 12)
    assert torch.equal(graphed.tokens, plain.tokens)
    assert len(set(plain.tokens[0].tolist())) > 1            # a decoder that varies
    assert len(marks) == 1 + 12                              # the encoder, then each step


def test_hf_generate_is_not_compiled_under_cuda_graphs_on_a_gpu():
    board = Switchboard(varied_tiny_model().model, torch.device("cuda"), max_new_tokens=8)
    for mode in ("reduce-overhead", "max-autotune"):
        variant = board.resolve(OptConfig(compile=mode))
        assert variant.options.compile == "default"
        assert HF_GENERATE_GRAPHS_REFUSED in variant.notes
    fullgraph = board.resolve(OptConfig(compile="reduce-overhead", decode="fullgraph"))
    assert fullgraph.options.compile == "reduce-overhead" and not fullgraph.notes


def test_tf32_is_refused_where_there_is_none():
    board = Switchboard(varied_tiny_model().model, torch.device("cpu"), max_new_tokens=8)
    variant = board.resolve(OptConfig(tf32="on"))
    assert variant.options.tf32 == "off"
    assert any("tf32" in note for note in variant.notes)
    cpu = Switchboard(varied_tiny_model().model, torch.device("cpu"), max_new_tokens=8)
    assert cpu.resolve(OptConfig(compile="reduce-overhead")).options.compile == "reduce-overhead"
