"""A fault inside one request never takes the engine down, and no request is lost."""

import torch._dynamo

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
    assert engine.session.freeze().segments()[0].failed == 1


def test_int8_is_served_or_refused_with_a_reason(make_engine):
    engine = make_engine("decode=fullgraph", "quant=int8")
    record = serve(engine, [(7, 3)])[0]
    assert record.ok, record.error
    if engine.options.quant == "off":
        assert any("int8" in n.text for n in engine.session.freeze().notices)


def test_options_that_cannot_combine_are_said_and_recorded_as_served(make_engine):
    engine = make_engine("decode=hf-generate", "kv_cache=off", "batching=continuous")
    record = serve(engine, [(7, 3)])[0]
    assert record.ok
    data = engine.session.freeze()
    served = data.configs[record.config_id].options
    assert (served.decode, served.kv_cache, served.batching) == ("fullgraph", "on", "continuous")
    texts = " ".join(n.text for n in data.notices)
    assert "decode=fullgraph" in texts and "kv_cache=on" in texts
