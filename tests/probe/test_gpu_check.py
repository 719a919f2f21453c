"""`make gpu-check` runs anywhere: without a CUDA device it says so and succeeds."""

import torch

from probe.engine.measure.gpu_check import main


def test_without_a_gpu_it_says_so_and_writes_nothing(tmp_path, capsys):
    if torch.cuda.is_available():
        return      # on a GPU machine the check itself runs (minutes): `make gpu-check`
    assert main(["--out", str(tmp_path / "out")]) == 0
    assert "no CUDA device here" in capsys.readouterr().out
    assert not (tmp_path / "out").exists()


def test_the_warm_ms_per_token_skips_requests_that_have_none():
    """One output token each (`--output-tokens 1`) leaves every tpot None: the median is None,
    not a TypeError from sorting Nones (mypy found it)."""
    from probe.engine.measure.gpu_check import warm_tpot_ms
    from tests.conftest import synthetic_record

    one_token = [synthetic_record(f"g{i}", i, latency_ms=10.0, output_tokens=1) for i in range(4)]
    assert warm_tpot_ms(one_token) is None
    served = [synthetic_record(f"g{i}", i, latency_ms=v, output_tokens=5)
              for i, v in enumerate([900.0, 40.0, 20.0, 30.0])]
    failed = synthetic_record("g4", 4, latency_ms=1.0, output_tokens=1, error="boom")
    assert warm_tpot_ms(served + [failed]) == served[3].tpot_ms     # the first warms: not counted
