"""--model and --device checked without torch: what is refused, with which line, and what
passes on to the engine."""

from __future__ import annotations

import json

import pytest

from probe.checks.engine_inputs import check_device, check_engine_inputs, check_model
from probe.common.errors import BadInput


@pytest.mark.parametrize("device", ["auto", "cpu", "cuda", "cuda:0", "cuda:12"])
def test_devices_torch_would_parse_pass(device):
    check_device(device)


@pytest.mark.parametrize("device", ["gpu", "CPU", "cuda:", "cuda:-1", "cuda:x", "mps", "cpu:0",
                                    "", " cuda", "cuda:0\n", "cuda:99999"])
def test_other_devices_are_refused_in_one_line(device):
    with pytest.raises(BadInput) as raised:
        check_device(device)
    assert str(raised.value) == (f"--device {device!r} is not a device; use auto, cpu, cuda or "
                                 f"cuda:N")


def headers_only(folder, config: dict):
    """A checkpoint folder whose safetensors header names every tensor of `config`'s model at
    its shape (no data: the checks read headers only), built without torch."""
    from probe.checks.checkpoint_check import checked_shape, expected_tensors

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    tensors = expected_tensors(checked_shape(str(folder), config["model_type"], config))
    header = json.dumps({name: {"dtype": "F32", "shape": list(dims), "data_offsets": [0, 0]}
                         for name, dims in tensors.items()}).encode()
    (folder / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header)
    return folder


TINY_MT5 = {"model_type": "mt5", "d_model": 8, "d_ff": 16, "d_kv": 4, "num_heads": 2,
            "num_layers": 1, "vocab_size": 300}


def checkpoint(folder, config: object = None, weights: str = "model.safetensors"):
    folder.mkdir()
    if config is not None:
        (folder / "config.json").write_text(config if isinstance(config, str)
                                            else json.dumps(config))
    if weights:
        (folder / weights).write_bytes(b"\0")
    return folder


def test_presets_and_checkpoint_folders_pass(tmp_path):
    check_model("t5-small")
    check_model("t5-tiny")
    check_model(str(headers_only(tmp_path / "mt5", TINY_MT5)))


@pytest.mark.parametrize("make, said", [
    (lambda p: str(checkpoint(p / "m", None)), "no config.json in this folder"),
    (lambda p: str(checkpoint(p / "m", {"model_type": "bert"})),
     "config.json says model_type 'bert'; infertop serves T5-family encoder-decoders (t5, mt5)"),
    (lambda p: str(checkpoint(p / "m", "{not json")), "config.json could not be read"),
    (lambda p: str(checkpoint(p / "m", {"model_type": "t5"}, "pytorch_model.bin")),
     "no *.safetensors weights in this folder (pickle checkpoints such as pytorch_model.bin"),
    (lambda p: str(checkpoint(p / "m", {"model_type": "t5"}, "")), "no *.safetensors"),
    (lambda p: (p / "f").write_text("x") and str(p / "f"), "is a file; give a preset"),
    (lambda p: str(p / "missing"), "is not a preset (t5-small, t5-tiny), nor a checkpoint "
                                   "folder, nor in the Hugging Face cache (offline)"),
    (lambda p: "t5-huge", "'t5-huge' is not a preset"),
])
def test_models_that_cannot_be_served_are_named(tmp_path, make, said):
    with pytest.raises(BadInput, match="^--model ") as raised:
        check_model(make(tmp_path))
    assert said in str(raised.value) and "\n" not in str(raised.value)


def test_a_hub_id_passes_when_cached_or_when_downloads_are_allowed(tmp_path, monkeypatch):
    import huggingface_hub.constants as constants
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.delenv("INFERTOP_ALLOW_DOWNLOAD", raising=False)
    with pytest.raises(BadInput, match="nor in the Hugging Face cache"):
        check_model("google/t5-efficient-tiny")
    snapshot = tmp_path / "models--google--t5-efficient-tiny" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    with pytest.raises(BadInput, match="model_type None"):   # the cached config is checked
        check_model("google/t5-efficient-tiny")
    headers_only(snapshot, {**TINY_MT5, "model_type": "t5"})
    check_model("google/t5-efficient-tiny")
    monkeypatch.setenv("INFERTOP_ALLOW_DOWNLOAD", "1")
    check_model("google/flan-t5-base")


def test_the_device_is_checked_first():
    with pytest.raises(BadInput, match="--device"):
        check_engine_inputs("no-such-model", "tpu")


def test_torch_trace_is_kept_beside_the_snapshots_only_when_asked(tmp_path):
    import argparse

    from probe.engine.process.engine_process import torch_trace_dir
    asked = argparse.Namespace(torch_trace=True, snapshot_dir=str(tmp_path / "snaps"))
    folder = torch_trace_dir(asked)
    assert folder.startswith(str(tmp_path / "snaps" / "torch_trace-"))
    assert torch_trace_dir(argparse.Namespace(torch_trace=False, snapshot_dir="x")) == ""
