"""Options only inductor acts on (freezing, gemv): what torch.compile is given, and that the
batch-1 matmul decomposition really happens in a compiled decode step (inductor's own counter)."""

import pytest

from probe.contract.options import OptConfig
from probe.engine.switchboard import GEMV_MAX_DIM, inductor_arguments, widen_gemv_decomposition


def test_a_plain_mode_is_passed_as_a_mode():
    assert inductor_arguments(OptConfig(compile="default")) == {}
    assert inductor_arguments(OptConfig(compile="max-autotune")) == {"mode": "max-autotune"}


@pytest.mark.parametrize("mode", ["default", "reduce-overhead", "max-autotune"])
def test_our_options_keep_the_mode_s_own_options(mode):
    from torch._inductor import list_mode_options
    both = OptConfig(compile=mode, freezing="on", gemv="inductor")
    options = inductor_arguments(both)["options"]
    assert options == {**list_mode_options(mode), "freezing": True,
                       "post_grad_fusion_options": {"decompose_mm_pass": {
                           "cpu_max_other_dimension_decomposition": GEMV_MAX_DIM}}}
    assert "freezing" not in inductor_arguments(both.with_option("freezing", "off"))["options"]


def test_without_compile_the_inductor_options_are_off_with_a_note(make_engine):
    engine = make_engine("decode=fullgraph")
    variant = engine.switchboard.resolve(OptConfig(decode="fullgraph", gemv="inductor",
                                                   freezing="on"))
    assert variant.options.gemv == "library" and variant.options.freezing == "off"
    assert any("gemv is an inductor option" in note for note in variant.notes)


@pytest.mark.slow
def test_gemv_inductor_decomposes_the_decoder_matmuls(make_engine):
    from torch._dynamo.utils import counters

    from tests.conftest import serve
    counters.clear()
    engine = make_engine("compile=default", "decode=fullgraph", "gemv=inductor",
                         backend="inductor", max_new_tokens=4)
    baseline = make_engine("decode=fullgraph", max_new_tokens=4)
    records = serve(engine, [(7, 4)])
    assert records[0].ok, records[0].error
    assert counters["inductor"]["decompose_mm"] + counters["inductor"]["decompose_addmm"] > 0
    from torch._inductor.fx_passes import decompose_mem_bound_mm as mm_pass
    assert mm_pass.cpu_max_other_dimension_decomposition >= GEMV_MAX_DIM   # lm_head included
    assert records[0].tokens == serve(baseline, [(7, 4)])[0].tokens     # the same greedy tokens


def test_widening_the_gemv_pass_raises_its_limit_and_never_lowers_it(monkeypatch):
    from torch._inductor.fx_passes import decompose_mem_bound_mm as mm_pass
    monkeypatch.setattr(mm_pass, "cpu_max_other_dimension_decomposition", 2048)
    widen_gemv_decomposition()
    assert mm_pass.cpu_max_other_dimension_decomposition == GEMV_MAX_DIM
    monkeypatch.setattr(mm_pass, "cpu_max_other_dimension_decomposition", 10 * GEMV_MAX_DIM)
    widen_gemv_decomposition()
    assert mm_pass.cpu_max_other_dimension_decomposition == 10 * GEMV_MAX_DIM
