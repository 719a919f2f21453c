"""What `--model` and `--device` may be, checked without torch: a bad value is refused in well
under a second, before the engine's imports (torch, transformers: seconds) start.

The checks are of form only — a preset name or a folder that looks like a checkpoint, a device
string torch would parse. Whether the folder's weights load and whether CUDA is there is found
when the engine loads them (probe/engine/model/loading.py, probe/engine/observe/device_probe.py)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TypedDict

from probe.checks.checkpoint_check import check_checkpoint, check_fits_memory, checked_shape
from probe.common.errors import BadInput, TraceError
from probe.common.textio import JsonProblem, parse_json, read_text


class PresetShape(TypedDict):
    """A preset's T5Config fields (its shape; the rest are T5's defaults)."""
    d_model: int
    d_ff: int
    d_kv: int
    num_heads: int
    num_layers: int
    num_decoder_layers: int
    vocab_size: int


PRESETS: dict[str, PresetShape] = {
    # The real t5-small shape.
    "t5-small": PresetShape(d_model=512, d_ff=2048, d_kv=64, num_heads=8, num_layers=6,
                            num_decoder_layers=6, vocab_size=32128),
    # For tests: compiles in seconds on two cores; vocab just above the byte tokenizer's.
    "t5-tiny": PresetShape(d_model=64, d_ff=128, d_kv=16, num_heads=4, num_layers=2,
                           num_decoder_layers=2, vocab_size=512),
}
SUPPORTED_MODEL_TYPES = ("t5", "mt5")
DEVICE_FORM = re.compile(r"auto|cpu|cuda(:\d{1,4})?")
HUB_ID = re.compile(r"[\w.-]+/[\w.-]+")
DOWNLOAD_ENV = "INFERTOP_ALLOW_DOWNLOAD"
CHECKED_POSITIONS = 1024  # one request of the default --max-input 512 + --max-output 512


def check_engine_inputs(model: str, device: str, positions: int = CHECKED_POSITIONS) -> None:
    """BadInput (exit 2) naming the first of `--model`, `--device` that cannot be served;
    `positions`: the longest request (input + output), for the memory check."""
    check_device(device)
    check_model(model, positions)


def check_device(name: str) -> None:
    if not DEVICE_FORM.fullmatch(name):
        raise BadInput(f"--device {name!r} is not a device; use auto, cpu, cuda or cuda:N")


def check_model(name: str, positions: int = CHECKED_POSITIONS) -> None:
    """A preset, a checkpoint folder (config.json of a T5-family model + *.safetensors), or a
    hub id already in the Hugging Face cache (any hub id when downloads are allowed); its
    weights and one request of `positions` tokens must fit in the memory available."""
    if name in PRESETS:
        check_fits_memory(name, checked_shape(name, "t5", dict(PRESETS[name])), positions,
                          source="")
        return
    path = Path(name)
    if path.is_dir():
        _check_folder(name, path, positions)
        return
    if path.exists():
        raise BadInput(f"--model {name}: is a file; give a preset ({', '.join(PRESETS)}) or "
                          f"a checkpoint folder")
    if HUB_ID.fullmatch(name) and os.environ.get(DOWNLOAD_ENV) == "1":
        return
    cached = _hub_cached_folder(name) if HUB_ID.fullmatch(name) else None
    if cached is not None:
        _check_folder(name, cached, positions)
        return
    raise BadInput(f"--model {name!r} is not a preset ({', '.join(PRESETS)}), nor a "
                      f"checkpoint folder, nor in the Hugging Face cache (offline)")


def _check_folder(name: str, folder: Path, positions: int) -> None:
    config = folder / "config.json"
    if not config.is_file():
        raise BadInput(f"--model {name}: no config.json in this folder; a checkpoint folder "
                          f"holds config.json and *.safetensors")
    try:
        document = parse_json(read_text(config))
    except (TraceError, JsonProblem) as exc:
        raise BadInput(f"--model {name}: config.json could not be read: {exc}") from None
    model_type = document.get("model_type") if isinstance(document, dict) else None
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise BadInput(f"--model {name}: config.json says model_type {model_type!r}; infertop "
                          f"serves T5-family encoder-decoders "
                          f"({', '.join(SUPPORTED_MODEL_TYPES)})")
    if not any(folder.glob("*.safetensors")):
        raise BadInput(f"--model {name}: no *.safetensors weights in this folder (pickle "
                          f"checkpoints such as pytorch_model.bin are not loaded)")
    check_checkpoint(name, folder, model_type, document, positions)


def _hub_cached_folder(repo_id: str) -> Path | None:
    """The cached snapshot folder of a hub id (the newest), or None when it is not cached."""
    from huggingface_hub.constants import HF_HUB_CACHE  # constants only: milliseconds

    snapshots = Path(HF_HUB_CACHE) / f"models--{repo_id.replace('/', '--')}" / "snapshots"
    found = sorted(snapshots.glob("*/config.json"), key=lambda p: p.stat().st_mtime)
    return found[-1].parent if found else None
