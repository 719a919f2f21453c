"""qkv=fused: inductor's concat-linear pass over frozen weights — what torch.compile is given,
that the switchboard turns freezing on for it, and that a compiled step with it decodes the
eager loop's tokens."""

import pytest

from probe.contract.options import OptConfig
from probe.engine.switchboard import inductor_arguments


def test_fused_qkv_asks_inductor_for_concat_linear():
    fused = inductor_arguments(OptConfig(compile="default", qkv="fused", freezing="on"))
    assert fused["options"]["cpp.enable_concat_linear"] is True
    separate = inductor_arguments(OptConfig(compile="default", freezing="on"))
    assert "cpp.enable_concat_linear" not in separate["options"]


def test_fused_qkv_turns_freezing_on_and_says_so(make_engine):
    engine = make_engine("decode=fullgraph", backend="inductor")
    variant = engine.switchboard.resolve(OptConfig(compile="default", decode="fullgraph",
                                                   qkv="fused"))
    assert variant.options.freezing == "on"
    assert any("freezing=on" in note for note in variant.notes)
    eager = engine.switchboard.resolve(OptConfig(decode="fullgraph", qkv="fused"))
    assert eager.options.qkv == "separate" and eager.options.freezing == "off"


@pytest.mark.slow
def test_a_fused_step_decodes_the_eager_tokens(make_engine):
    from tests.conftest import serve
    shapes = [(9, 6), (9, 6)]
    fused = make_engine("compile=default", "decode=fullgraph", "qkv=fused", "freezing=on",
                        backend="inductor", max_new_tokens=6)
    eager = make_engine("decode=fullgraph", max_new_tokens=6)
    got, want = serve(fused, shapes), serve(eager, shapes)
    assert all(r.ok for r in got), [r.error for r in got]
    assert [r.tokens for r in got] == [r.tokens for r in want]
