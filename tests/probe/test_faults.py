"""A fault inside one request never takes the engine down, and no request is lost."""

import pytest
import torch._dynamo

from probe.analysis.stats import session_segments
from tests.conftest import serve


@torch._dynamo.register_backend
def infertop_failing_backend(graph_module, example_inputs):
    raise RuntimeError("backend exploded on purpose")


def test_a_failing_compile_falls_back_to_eager(make_engine):
    engine = make_engine("decode=fullgraph", "compile=default",
                         backend="infertop_failing_backend")
    records = serve(engine, [(7, 3), (9, 3)])
    assert all(r.ok for r in records), [r.error for r in records]
    data = engine.session.freeze()
    fallbacks = [e for e in data.events if e.kind == "fallback"]
    assert len(fallbacks) == 1 and "backend exploded" in fallbacks[0].reason
    assert any("runs eager" in n.text for n in data.notices)


def test_an_error_in_one_request_fails_only_that_request(make_engine):
    engine = make_engine("decode=fullgraph", max_new_tokens=8)
    records = serve(engine, [(7, 3), (7, 50), (7, 3)])   # 50 > the static cache's 8
    assert [r.ok for r in records] == [True, False, True]
    assert "exceed" in records[1].error
    assert len(engine.session.freeze().records) == 3
    assert session_segments(engine.session.freeze())[0].failed == 1


@pytest.mark.parametrize("quant", ["int8", "int4"])
def test_weight_quantization_is_served_or_refused_with_a_reason(make_engine, quant):
    from probe.engine.measure.step_roofline import weight_bytes
    engine = make_engine("decode=fullgraph", f"quant={quant}")
    record = serve(engine, [(7, 3)])[0]
    assert record.ok, record.error
    notes = [n.text for n in engine.session.freeze().notices]
    if engine.options.quant == quant:       # served: the weights really are smaller
        full = weight_bytes(engine.switchboard.model_for(engine.options.with_option("quant", "off")))
        assert weight_bytes(engine.switchboard.model_for(engine.options)) < full / 2
        assert not any(f"{quant} weight-only" in text for text in notes)
    else:                                   # refused: said, with the reason, and served off
        assert engine.options.quant == "off"
        assert any(f"{quant} weight-only quantization is not available here (" in text
                   for text in notes)


def test_options_that_cannot_combine_are_said_and_recorded_as_served(make_engine):
    engine = make_engine("decode=hf-generate", "kv_cache=off", "batching=continuous")
    record = serve(engine, [(7, 3)])[0]
    assert record.ok
    data = engine.session.freeze()
    served = data.configs[record.config_id].options
    assert (served.decode, served.kv_cache, served.batching) == ("fullgraph", "on", "continuous")
    texts = " ".join(n.text for n in data.notices)
    assert "decode=fullgraph" in texts and "kv_cache=on" in texts
