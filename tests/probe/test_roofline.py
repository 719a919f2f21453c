import pytest
import torch
from transformers import T5Config, T5ForConditionalGeneration

from probe.engine.measure import step_roofline
from probe.engine.measure.step_roofline import (
    classify,
    decode_step_bytes,
    measure_bandwidth,
    measure_matmul_gflops,
    weight_bytes,
)


def _t5(**shape) -> T5ForConditionalGeneration:
    config = T5Config(decoder_start_token_id=0, pad_token_id=0, eos_token_id=1, **shape)
    return T5ForConditionalGeneration(config).eval()


SMALLISH = dict(d_model=64, d_ff=256, d_kv=16, num_heads=4, num_layers=2, num_decoder_layers=3,
                vocab_size=1000, relative_attention_num_buckets=32)


def test_step_bytes_match_the_decoder_formula() -> None:
    model = _t5(**SMALLISH)
    d, ff, inner, layers, vocab = 64, 256, 4 * 16, 3, 1000
    self_attention = 4 * d * inner
    cross_q_o = 2 * d * inner
    cross_k_v = 2 * d * inner
    feed_forward = 2 * d * ff
    norms = 3 * d * layers + d               # three per block, one final
    rel_bias = 32 * 4                        # only the first block has the bias table
    per_layer = self_attention + cross_q_o + feed_forward
    step = decode_step_bytes(model)
    assert step.decoder_layers == 4 * (per_layer * layers + norms + rel_bias)
    assert step.cross_kv_skipped == 4 * cross_k_v * layers
    assert step.lm_head == 4 * vocab * d     # tied: the shared embedding, counted once
    assert step.total == step.decoder_layers + step.lm_head
    uncached = decode_step_bytes(model, kv_cache=False)
    assert uncached.total == step.total + step.cross_kv_skipped


def test_t5_small_reads_about_166_mb_per_step_before_the_cached_projections() -> None:
    # ~166 MB of decoder + tied lm_head weights for the t5-small shape (the analytic count).
    with_meta = dict(d_model=512, d_ff=2048, d_kv=64, num_heads=8, num_layers=6,
                     num_decoder_layers=6, vocab_size=32128)
    import torch
    with torch.device("meta"):
        model = _t5(**with_meta)
    step = decode_step_bytes(model, kv_cache=False)
    assert step.total == pytest.approx(166e6, rel=0.01)
    assert decode_step_bytes(model).total == pytest.approx(166e6 - 12.6e6, rel=0.01)


def test_weight_bytes_counts_a_tied_weight_once() -> None:
    model = _t5(**SMALLISH)
    expected = sum(p.numel() * p.element_size() for p in model.parameters())  # deduplicated
    assert weight_bytes(model) == expected


def test_bandwidth_and_gemm_are_measured() -> None:
    bandwidth = measure_bandwidth("cpu", buffer_bytes=8 * 2**20, repeats=2)
    assert bandwidth.read_gb_s > 0.1 and bandwidth.copy_gb_s > 0.1
    assert bandwidth.buffer_bytes == pytest.approx(8 * 2**20, rel=0.01)
    assert measure_matmul_gflops("cpu", size=128, repeats=2) > 0.1


@pytest.mark.parametrize("gemv_s, sum_s", [(2.0, 1.0), (1.0, 4.0)])
def test_read_bandwidth_is_the_faster_of_gemv_and_sum(monkeypatch, gemv_s, sum_s) -> None:
    # best_seconds is called for the matrix-vector product, then the sum, then the copy.
    times = iter([gemv_s, sum_s, 1.0])
    monkeypatch.setattr(step_roofline, "best_seconds", lambda fn, repeats, device: next(times))
    bandwidth = measure_bandwidth("cpu", buffer_bytes=2**20, repeats=1)
    assert bandwidth.read_gb_s == pytest.approx(bandwidth.buffer_bytes / min(gemv_s, sum_s) / 1e9)
    assert bandwidth.copy_gb_s == pytest.approx(2 * bandwidth.buffer_bytes / 1.0 / 1e9)


def test_classify_overhead_vs_memory_bound() -> None:
    # 100 MB at 10 GB/s = 10 ms roofline; compute 50 M FLOPs at 100 GFLOP/s = 0.5 ms
    near = classify(12.0, 100_000_000, 10.0, 100.0)
    assert near.roofline_ms == pytest.approx(10.0)
    assert near.ratio == pytest.approx(1.2) and near.bound == "memory"
    between = classify(24.0, 100_000_000, 10.0, 100.0)
    assert between.bound == "memory" and "58%" in between.explanation   # 1 − 1/2.4
    far = classify(80.0, 100_000_000, 10.0, 100.0)
    assert far.bound == "overhead" and "8.00×" in far.explanation
    assert classify(None, 100_000_000, 10.0, None).ratio is None


def test_step_bytes_per_precision_are_measured_on_converted_copies() -> None:
    from probe.engine.precision_copies import step_bytes_by_precision
    model = _t5(**SMALLISH)
    fp32 = decode_step_bytes(model).total
    by_precision = step_bytes_by_precision(model)
    assert by_precision["fp32"] == fp32
    assert by_precision["bf16"] == fp32 // 2
    int8 = by_precision["int8"]
    # int8 weights (1 byte) plus per-row scales, norms left in bf16: between ¼ and ½ of fp32
    assert isinstance(int8, str) or fp32 // 4 < int8 < fp32 // 2
    assert next(model.parameters()).dtype == torch.float32   # the original is untouched
