"""Model loading: the embedded random-initialised presets, or a local T5 checkpoint.

Random weights cost exactly what trained ones cost per token, so the presets give true timings
with no download. A checkpoint is read offline (a local folder or the HF cache), as safetensors,
never with remote code.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union, cast

import torch
from transformers import (
    AutoConfig,
    AutoTokenizer,
    MT5ForConditionalGeneration,
    PreTrainedTokenizerBase,
    T5Config,
    T5ForConditionalGeneration,
)
from transformers.utils import logging as transformers_logging

from probe.checks.engine_inputs import PRESETS, SUPPORTED_MODEL_TYPES
from probe.common.errors import BadCheckpoint
from probe.engine.model.tokenizer import BYTE_VOCAB_SIZE, byte_tokenizer

CONFIG_KEYS = ("d_model", "d_kv", "d_ff", "num_heads", "num_layers", "num_decoder_layers",
               "vocab_size")
PRESET_SEED = 0
# The presets' weights: N(0, (PRESET_WEIGHT_SCALE / sqrt(d_model))²) for every parameter.
# transformers' own init left every greedy token of every request the same id whatever the
# input, so drift (tokens against the fp32 reference) could never fail; at this scale the
# tokens depend on the input (docs/steady-state.md has the measurement). Same shapes, same
# dtype: the cost per token is unchanged.
PRESET_WEIGHT_SCALE = 3.2
# mt5 is T5 with its own config class (no scale_decoder_outputs): each type its own model class
MODEL_CLASSES: dict[str, type[T5ForConditionalGeneration] | type[MT5ForConditionalGeneration]] = {
    "t5": T5ForConditionalGeneration, "mt5": MT5ForConditionalGeneration}
# What the engine serves: both classes hold the same module tree (encoder, decoder, lm_head)
T5Family = Union[T5ForConditionalGeneration, MT5ForConditionalGeneration]
T5_DEFAULT_START = 0   # T5's decoder starts from the pad token, id 0
TIED = ("encoder.embed_tokens.weight", "decoder.embed_tokens.weight", "lm_head.weight")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelInfo:
    name: str
    source: str                 # "preset" | a folder
    parameters: int
    config: dict[str, Any]

    def as_dict(self, dtype: str) -> dict[str, Any]:
        return {"name": self.name, "source": self.source, "parameters": self.parameters,
                "dtype": dtype, "config": dict(self.config)}


@dataclass(frozen=True)
class DecoderDims:
    """The decoder's sizes and token ids, as the decode paths and KV caches read them: T5Config
    types the layer count and the token ids as optional; load_model leaves none of them unset."""
    layers: int
    heads: int
    d_kv: int
    pad_token_id: int
    start_token_id: int

    @classmethod
    def of(cls, model: T5Family) -> DecoderDims:
        config = model.config
        layers, pad = config.num_decoder_layers, config.pad_token_id
        start = config.decoder_start_token_id
        if layers is None or pad is None or start is None:
            raise BadCheckpoint(f"model config without num_decoder_layers ({layers}), "
                              f"pad_token_id ({pad}) or decoder_start_token_id ({start})")
        return cls(layers, config.num_heads, config.d_kv, pad, start)


@dataclass
class LoadedModel:
    model: T5Family
    tokenizer: PreTrainedTokenizerBase
    info: ModelInfo


def _preset(name: str) -> tuple[T5ForConditionalGeneration, PreTrainedTokenizerBase]:
    config = T5Config(**PRESETS[name], pad_token_id=0, eos_token_id=1, dropout_rate=0.0)
    config.decoder_start_token_id = 0    # not one of T5Config's declared fields: set, not passed
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(PRESET_SEED)
        model = T5ForConditionalGeneration(config)
    input_dependent_weights(model, PRESET_SEED)
    return model, byte_tokenizer()


def input_dependent_weights(model: T5ForConditionalGeneration, seed: int) -> None:
    """Every parameter redrawn from N(0, (PRESET_WEIGHT_SCALE / sqrt(d_model))²)."""
    generator = torch.Generator().manual_seed(seed)
    sigma = PRESET_WEIGHT_SCALE / model.config.d_model ** 0.5
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * sigma)


def _checkpoint(name: str) -> tuple[T5Family, PreTrainedTokenizerBase, str]:
    offline = os.environ.get("INFERTOP_ALLOW_DOWNLOAD") != "1"
    try:
        config = AutoConfig.from_pretrained(name, local_files_only=offline, trust_remote_code=False)
    except OSError as exc:
        raise BadCheckpoint(
            f"model {name!r} is not a preset ({', '.join(PRESETS)}), nor a checkpoint folder, "
            f"nor in the Hugging Face cache (offline): {str(exc).splitlines()[0]}") from None
    except ValueError as exc:
        raise BadCheckpoint(f"model {name!r}: its config.json could not be read: {exc}") from None
    if config.model_type not in SUPPORTED_MODEL_TYPES:
        raise BadCheckpoint(f"model {name!r} is a {config.model_type!r} model; infertop serves "
                          f"T5-family encoder-decoders ({', '.join(SUPPORTED_MODEL_TYPES)})")
    _start_token(name, config)
    model = _weights(name, config, offline)
    if getattr(model.generation_config, "decoder_start_token_id", None) is None:
        model.generation_config.decoder_start_token_id = config.decoder_start_token_id
    try:
        tokenizer = AutoTokenizer.from_pretrained(name, local_files_only=offline)
    except (OSError, ValueError):
        if config.vocab_size < BYTE_VOCAB_SIZE:
            raise BadCheckpoint(f"checkpoint {name!r} has no tokenizer and its vocabulary "
                              f"({config.vocab_size}) is too small for the byte tokenizer") from None
        tokenizer = byte_tokenizer()
    source = str(Path(name).resolve()) if Path(name).exists() else "hf-cache"
    return model, tokenizer, source


def _start_token(name: str, config: T5Config) -> None:
    """Generation starts from decoder_start_token_id: without one, T5's own (the pad token)."""
    pad = getattr(config, "pad_token_id", None)   # transformers 5: absent, not None
    if pad is None:
        config.pad_token_id = pad = T5_DEFAULT_START
    if getattr(config, "decoder_start_token_id", None) is None:
        config.decoder_start_token_id = pad
        log.warning("infertop: note: model %s has no decoder_start_token_id; using %d "
                    "(T5's default, the pad token)", name, pad)


def _weights(name: str, config: T5Config, offline: bool) -> T5Family:
    """The checkpoint's weights; transformers' load report goes to the log. Any tensor of the
    model not in the checkpoint is refused (it would be served with random weights)."""
    verbosity = transformers_logging.get_verbosity()
    transformers_logging.set_verbosity_error()
    try:
        # transformers annotates from_pretrained as returning the model; with
        # output_loading_info=True it returns (model, the load report) instead
        model, info = cast(tuple[T5Family, dict[str, list]],
                           MODEL_CLASSES[config.model_type].from_pretrained(
                               name, config=config, local_files_only=offline,
                               use_safetensors=True, trust_remote_code=False,
                               output_loading_info=True))
    except Exception as exc:  # safetensors, OS and format errors alike mean "cannot serve this"
        raise BadCheckpoint(f"checkpoint {name!r} could not be loaded (config + safetensors "
                          f"expected): {str(exc).splitlines()[0]}") from None
    finally:
        transformers_logging.set_verbosity(verbosity)
    log.info("checkpoint %s load report: %s", name, info)
    missing = sorted(set(info.get("missing_keys", ())) - set(TIED))
    mismatched = list(info.get("mismatched_keys", ()))
    if missing or mismatched:
        total = len(model.state_dict()) - len(TIED)
        detail = (f"holds {total - len(missing)} of the model's {total} tensors (missing: "
                  f"{', '.join(missing[:3])})" if missing else
                  f"has tensors of the wrong shape ({', '.join(map(str, mismatched[:3]))})")
        raise BadCheckpoint(f"checkpoint {name!r} {detail}; it would be served with random weights")
    return model


def load_model(name: str) -> LoadedModel:
    """A preset name or a checkpoint folder/id; BadCheckpoint on anything that cannot be served."""
    model: T5Family
    if name in PRESETS:
        model, tokenizer = _preset(name)
        source = "preset"
    else:
        model, tokenizer, source = _checkpoint(name)
    model.eval()
    model.requires_grad_(False)
    config = {key: getattr(model.config, key) for key in CONFIG_KEYS}
    parameters = sum(p.numel() for p in model.parameters())
    return LoadedModel(model, tokenizer, ModelInfo(name, source, parameters, config))
