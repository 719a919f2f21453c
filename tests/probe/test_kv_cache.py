"""KV bytes against the tensors themselves and against the analytic formula."""

import pytest

from probe.engine.decode.kv_cache import used_bytes_formula
from tests.conftest import serve

TINY = dict(heads=4, d_kv=16, decoder_layers=2)


def formula(element_bytes: int, self_positions: int, cross_positions: int) -> int:
    return used_bytes_formula(element_bytes=element_bytes, self_positions=self_positions,
                              cross_positions=cross_positions, **TINY)


@pytest.mark.parametrize("decode", ["hf-generate", "fullgraph"])
def test_used_bytes_follow_the_formula(make_engine, decode):
    engine = make_engine(f"decode={decode}")
    for record in serve(engine, [(9, 5), (17, 11)]):
        assert record.ok, record.error
        assert record.kv_cache_used_bytes == formula(4, record.output_tokens, record.input_tokens)


def test_dynamic_cache_holds_exactly_what_it_uses(make_engine):
    engine = make_engine("decode=hf-generate")
    for record in serve(engine, [(9, 5), (17, 11)]):
        assert record.kv_cache_bytes == record.kv_cache_used_bytes
        assert record.kv_cache_bytes == (record.kv_self_attention_bytes
                                         + record.kv_cross_attention_bytes)


def test_static_cache_holds_its_whole_allocation(make_engine):
    engine = make_engine("decode=fullgraph", max_new_tokens=24)
    record = serve(engine, [(9, 5)])[0]
    # Self-attention is allocated for all 24 positions, cross-attention for the encoder length.
    assert record.kv_self_attention_bytes == formula(4, 24, 0)
    assert record.kv_cross_attention_bytes == formula(4, 0, 9)
    assert record.kv_cache_bytes == formula(4, 24, 9) > record.kv_cache_used_bytes


def test_bf16_halves_the_bytes(make_engine):
    engine = make_engine("decode=fullgraph", "precision=bf16")
    record = serve(engine, [(9, 5)])[0]
    assert record.kv_cache_used_bytes == formula(2, 5, 9)


def test_no_cache_holds_nothing(make_engine):
    engine = make_engine("decode=fullgraph", "kv_cache=off")
    record = serve(engine, [(9, 5)])[0]
    assert record.ok and record.kv_cache_bytes == record.kv_cache_used_bytes == 0
