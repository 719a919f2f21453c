"""`make gpu-check` runs anywhere: without a CUDA device it says so and succeeds."""

import torch

from probe.engine.measure.gpu_check import main


def test_without_a_gpu_it_says_so_and_writes_nothing(tmp_path, capsys):
    if torch.cuda.is_available():
        return      # on a GPU machine the check itself runs (minutes): `make gpu-check`
    assert main(["--out", str(tmp_path / "out")]) == 0
    assert "no CUDA device here" in capsys.readouterr().out
    assert not (tmp_path / "out").exists()
