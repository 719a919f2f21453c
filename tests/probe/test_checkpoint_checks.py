"""Checkpoints are refused before anything is allocated when they cannot be served: a config
field of the wrong type or out of range, a model bigger than the machine's memory, tensors
missing or of the wrong shape. mt5 is served for real, and a config without
decoder_start_token_id starts from T5's default."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file
from transformers import (
    MT5Config,
    MT5ForConditionalGeneration,
    T5Config,
    T5ForConditionalGeneration,
)

from infertop.cli import main
from probe.checks.checkpoint_check import (
    check_fits_memory,
    checked_shape,
    expected_tensors,
    parameter_count,
)
from probe.checks.engine_inputs import check_model
from probe.common.errors import BadInput
from probe.engine.model.loading import load_model

TINY = dict(d_model=64, d_ff=128, d_kv=16, num_heads=4, num_layers=2, num_decoder_layers=2,
            vocab_size=512, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)


def save_tiny(folder: Path, kind: str = "t5", **overrides) -> Path:
    config_class, model_class = ((MT5Config, MT5ForConditionalGeneration) if kind == "mt5"
                                 else (T5Config, T5ForConditionalGeneration))
    torch.manual_seed(0)
    model_class(config_class(**{**TINY, **overrides})).save_pretrained(folder)
    return folder


def edit_config(folder: Path, **changes) -> None:
    path = folder / "config.json"
    config = json.loads(path.read_text())
    for key, value in changes.items():
        if value is ...:
            config.pop(key, None)
        else:
            config[key] = value
    path.write_text(json.dumps(config))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return save_tiny(tmp_path_factory.mktemp("tiny"))


@pytest.fixture
def copy(tiny: Path, tmp_path: Path) -> Path:
    """The tiny checkpoint in a folder of its own (an output may not go inside an input)."""
    folder = tmp_path / "model"
    folder.mkdir()
    for item in tiny.iterdir():
        (folder / item.name).write_bytes(item.read_bytes())
    return folder


@pytest.mark.parametrize("kind, overrides", [
    ("t5", {}), ("t5", {"feed_forward_proj": "gated-gelu", "num_decoder_layers": 3}),
    ("mt5", {})])
def test_the_expected_tensors_are_transformers_own(kind: str, overrides: dict) -> None:
    config = {**TINY, **overrides}
    model = (MT5ForConditionalGeneration(MT5Config(**config)) if kind == "mt5"
             else T5ForConditionalGeneration(T5Config(**config)))
    state = {name: tuple(t.shape) for name, t in model.state_dict().items()}
    expected = expected_tensors(checked_shape("m", kind, config))
    tied = {"encoder.embed_tokens.weight", "decoder.embed_tokens.weight", "lm_head.weight"}
    assert set(state) - tied == set(expected)
    assert all(state[name] == dims for name, dims in expected.items())
    assert parameter_count(checked_shape("m", kind, config)) == sum(
        p.numel() for p in model.parameters())


@pytest.mark.parametrize("field, value", [
    ("d_model", "abc"), ("d_model", float("nan")), ("num_layers", -1), ("num_heads", 0),
    ("d_ff", 1.5), ("vocab_size", True), ("num_decoder_layers", 10 ** 30), ("d_kv", None),
    ("layer_norm_epsilon", -1), ("dropout_rate", "x"), ("feed_forward_proj", "gated-nope"),
    ("decoder_start_token_id", 10_000), ("eos_token_id", [1, "x"]), ("pad_token_id", -3)])
def test_a_bad_config_field_is_one_line_naming_it(copy: Path, field: str, value) -> None:
    edit_config(copy, **{field: value})
    if field == "d_kv":   # null: transformers' default, a valid shape; the tensors then differ
        with pytest.raises(BadInput, match="has shape"):
            check_model(str(copy))
        return
    with pytest.raises(BadInput) as error:
        check_model(str(copy))
    message = str(error.value)
    assert f"field {field}:" in message and "\n" not in message


def test_a_huge_config_is_refused_before_anything_is_allocated(copy: Path, capsys,
                                                               monkeypatch) -> None:
    edit_config(copy, num_layers=1_000, d_ff=1 << 18, d_model=1 << 16)
    built: list[str] = []          # any model built (its weights allocated) is recorded here
    for model_class in (T5ForConditionalGeneration, MT5ForConditionalGeneration):
        def refuse(self, *args, _name=model_class.__name__, **kwargs):
            built.append(_name)
            raise AssertionError(f"{_name} was built for a config that cannot fit")
        monkeypatch.setattr(model_class, "__init__", refuse)
    assert main(["replay", "--model", str(copy), "--trace", "chat", "--out",
                 str(copy.parent / "out.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "memory available" in err and "num_layers=1,000" in err
    assert "fit" not in err and not (copy.parent / "out.json").exists()
    assert built == []


def test_the_memory_check_names_the_field_and_the_limit() -> None:
    shape = checked_shape("m", "t5", {**TINY, "num_layers": 1000})
    check_fits_memory("m", shape, 1024, available=10 ** 12)
    with pytest.raises(BadInput, match=r"num_layers=1,000 makes .* 0\.0 GB of memory"):
        check_fits_memory("m", shape, 1024, available=1)


@pytest.mark.parametrize("tensors, message", [
    ({"shared.weight": torch.zeros(512, 64)}, "hold 1 of the model's 47 tensors"),
    ({"unrelated": torch.zeros(2)}, "hold 0 of the model's 47 tensors (missing: shared.weight"),
])
def test_a_checkpoint_without_the_models_tensors_is_refused(copy: Path, tensors, message) -> None:
    save_file(tensors, str(copy / "model.safetensors"))
    with pytest.raises(BadInput) as error:
        check_model(str(copy))
    assert message in str(error.value) and "random weights" in str(error.value)


def test_a_tensor_of_the_wrong_shape_is_named(copy: Path) -> None:
    edit_config(copy, d_ff=256)
    with pytest.raises(BadInput, match=r"tensor .*DenseReluDense.wi.weight has shape "
                                          r"\[128, 64\]; config.json makes it \[256, 64\]"):
        check_model(str(copy))


def test_a_refused_checkpoint_prints_one_line_before_any_fit_summary(copy: Path, capsys) -> None:
    edit_config(copy, d_model="abc")
    assert main(["replay", "--model", str(copy), "--trace", "chat", "--out",
                 str(copy.parent / "o.json")]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [err.strip()] and "field d_model" in err


def test_the_loader_refuses_missing_tensors_too_and_logs_the_report(copy: Path, capfd,
                                                                     caplog) -> None:
    save_file({"shared.weight": torch.zeros(512, 64)}, str(copy / "model.safetensors"))
    with caplog.at_level(logging.INFO, logger="probe.engine.model.loading"):
        with pytest.raises(BadInput, match="holds 1 of the model's 47 tensors"):
            load_model(str(copy))
    assert "load report" in caplog.text
    assert "MISSING" not in capfd.readouterr().err.upper()      # transformers' table: the log


def test_no_decoder_start_token_starts_from_t5s_default(copy: Path, caplog) -> None:
    edit_config(copy, decoder_start_token_id=..., pad_token_id=...)
    with caplog.at_level(logging.WARNING, logger="probe.engine.model.loading"):
        loaded = load_model(str(copy))
    assert loaded.model.config.decoder_start_token_id == 0
    assert "no decoder_start_token_id; using 0" in caplog.text
    out = loaded.model.generate(torch.tensor([[5, 6, 7, 1]]), max_new_tokens=3, do_sample=False)
    assert out.shape[1] >= 2


def test_mt5_is_served_for_real(tmp_path: Path, capsys) -> None:
    folder = save_tiny(tmp_path / "mt5", "mt5")
    check_model(str(folder))
    out = tmp_path / "s.json"
    assert main(["replay", "--model", str(folder), "--trace", "chat", "--requests", "3",
                 "--speed", "100", "--device", "cpu", "--out", str(out)]) == 0
    session = json.loads(out.read_text())
    assert len(session["requests"]) == 3
    assert all(r["error"] is None and r["output_tokens"] > 0 for r in session["requests"])
