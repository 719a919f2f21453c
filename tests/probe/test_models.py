from pathlib import Path

import pytest
import torch

from probe.common.errors import BadInput
from probe.engine.model.loading import PRESETS, load_model


def test_t5_small_preset_has_the_real_t5_small_shape():
    info = load_model("t5-small").info
    assert info.config == {"d_model": 512, "d_kv": 64, "d_ff": 2048, "num_heads": 8,
                           "num_layers": 6, "num_decoder_layers": 6, "vocab_size": 32128}
    # t5-small has 60.5 M parameters (tied embeddings counted once).
    assert 60_000_000 < info.parameters < 61_000_000


def test_presets_are_deterministic():
    a, b = load_model("t5-tiny").model, load_model("t5-tiny").model
    for (name, pa), (_, pb) in zip(a.named_parameters(), b.named_parameters()):
        assert torch.equal(pa, pb), name


def test_embedded_tokenizer_is_offline_and_counts_bytes():
    tokenizer = load_model("t5-tiny").tokenizer
    assert len(tokenizer("héllo", add_special_tokens=False).input_ids) == len("héllo".encode())


def test_a_saved_checkpoint_loads_offline(tmp_path: Path):
    source = load_model("t5-tiny")
    source.model.save_pretrained(tmp_path, safe_serialization=True)
    loaded = load_model(str(tmp_path))
    assert loaded.info.source == str(tmp_path.resolve())
    assert loaded.info.config == source.info.config
    for (name, pa), (_, pb) in zip(source.model.named_parameters(),
                                   loaded.model.named_parameters()):
        assert torch.equal(pa, pb), name


def test_a_missing_model_names_the_presets(tmp_path: Path):
    with pytest.raises(BadInput, match="t5-small, t5-tiny"):
        load_model(str(tmp_path / "nowhere"))


def test_a_corrupt_checkpoint_is_a_clear_error(tmp_path: Path):
    load_model("t5-tiny").model.save_pretrained(tmp_path, safe_serialization=True)
    (tmp_path / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(BadInput, match="could not be loaded"):
        load_model(str(tmp_path))


def test_a_non_t5_model_is_refused(tmp_path: Path):
    (tmp_path / "config.json").write_text('{"model_type": "bert"}')
    with pytest.raises(BadInput, match="T5-family"):
        load_model(str(tmp_path))


def test_preset_names_are_the_documented_ones():
    assert set(PRESETS) == {"t5-small", "t5-tiny"}
