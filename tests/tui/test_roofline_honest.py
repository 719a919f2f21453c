"""The live roofline under batching, a bandwidth from another run, and a lever's missing
instructions read from the CPU's flags."""

from __future__ import annotations

from dataclasses import replace

from probe.analysis.batch_roofline import batch_step_ms, live_roofline_ms
from probe.analysis.cpu_levers import cpu_flags, lever_note
from probe.contract.records import RooflineStatus
from tests.probe.test_steady_state import request
from tui import derive
from tui.widgets.latency import roofline_line

ROOF = RooflineStatus(precision="fp32", step_bytes=100_000_000, bandwidth_gb_s=20.0,
                      measured_unix=1000.0, roofline_ms=5.0, kv_bytes_per_position=1000)


def rows(batch: float, n: int = 10):
    return [replace(request(i, 0.0, 0.0, 1.0, batch=batch), kv_cache_used_bytes=50_000,
                    output_tokens=11) for i in range(n)]


def test_batch_one_is_held_against_the_weights_roofline():
    assert live_roofline_ms(ROOF, rows(1.0)) == (5.0, 1.0)


def test_a_batched_row_is_held_against_the_batch_step():
    limit, occupancy = live_roofline_ms(ROOF, rows(6.0))
    kv_per_row_step = 50_000 - 1000 * (11 - 1) / 2          # E7's mean over the steps
    assert occupancy == 6.0
    assert limit == (100_000_000 + 6 * kv_per_row_step) / 20e9 * 1e3
    assert limit == batch_step_ms(ROOF.step_bytes, 1000, 20.0, rows(6.0), 6.0)
    assert limit > ROOF.roofline_ms


def test_the_live_line_names_the_batch_roofline_and_another_runs_bandwidth(stages):
    view = stages["continuous"]
    mine = tuple(replace(r, config_id=view.config_id, batch_size=6.0) for r in view.recent)
    view = replace(view, recent=mine,
                   roofline=replace(ROOF, from_earlier_run=True))
    tpot, ratio = derive.roofline_ratio(view)
    limit, occupancy = derive.roofline_limit(view)
    assert occupancy == 6.0 and ratio == tpot / limit
    line = roofline_line(view, 120, now_unix=1000.0 + 18 * 60).plain
    assert "batch-6.0 roofline" in line and "another run's, 18 min ago" in line


def test_a_levers_missing_instructions_come_from_the_flags(tmp_path):
    avx2 = frozenset({"avx2", "fma"})
    assert lever_note("bf16", "off", avx2) == "bf16: no AVX512-BF16/AMX here"
    assert lever_note("bf16", "off", avx2 | {"avx512f", "avx512_bf16"}) == (
        "bf16: AVX512-BF16, no AMX here")
    assert lever_note("bf16", "off", avx2 | {"avx512_bf16", "amx_bf16"}) is None
    assert lever_note("fp32", "int8", avx2) == "int8: no VNNI/AMX here"
    assert lever_note("fp32", "int8", avx2 | {"avx512_vnni"}) is None
    assert lever_note("fp32", "off", avx2) is None
    assert lever_note("bf16", "off", frozenset()) is None        # flags unknown: no claim
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu avx2 avx512_bf16\n\nflags\t: other\n")
    assert cpu_flags(info) == {"fpu", "avx2", "avx512_bf16"}
    assert cpu_flags(tmp_path / "none") == frozenset()


def test_the_note_is_on_the_roofline_line(stages):
    view = replace(stages["measured"], roofline=replace(
        ROOF, precision="bf16", lever_note="bf16: no AVX512-BF16/AMX here"))
    assert "bf16: no AVX512-BF16/AMX here" in roofline_line(view, 66, 1000.0).plain


def test_a_config_with_no_warm_request_shows_no_roofline_ratio():
    """Every request of it waited on a compile: its TPOT holds compile seconds that no
    roofline bounds (an H200 screen read "c3 TPOT 90 ms · 1,607× roofline" for such a config),
    so the line gives its TPOT and scope and no ratio; the first warm request brings it."""
    from probe.contract.figures import ConfigTpot
    cold = ConfigTpot("c3", tpot_ms=90.0, requests=12, warm=False, limit_ms=0.056)
    assert cold.ratio is None
    assert cold.text() == "c3 TPOT 90 ms (p50 of 12 req, none warm yet)"
    warm = ConfigTpot("c3", tpot_ms=0.112, requests=12, warm=True, limit_ms=0.056)
    assert warm.ratio == 2.0 and warm.text().endswith("· 2.00× roofline")
