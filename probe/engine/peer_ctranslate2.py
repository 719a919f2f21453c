"""CTranslate2 as the peer engine: the model's own weights through its converter, served on the
same input ids with greedy decoding and the output length forced, timed per generated token.

ctranslate2 is an optional extra (`pip install 'infertop[peers]'`); nothing here imports it
until a peer is built."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

INSTALL_HINT = "pip install 'infertop[peers]' (or: pip install ctranslate2)"


def ctranslate2_available() -> bool:
    """Whether it is installed, without importing it here (it runs in a process of its own)."""
    from importlib.util import find_spec
    return find_spec("ctranslate2") is not None


def supported_compute_types(device: str = "cpu") -> tuple[str, ...]:
    """What CTranslate2 offers on this machine, in a fixed order (fp32 first)."""
    import ctranslate2
    offered = set(ctranslate2.get_supported_compute_types(device))
    order = ("float32", "int8", "int8_float32", "bfloat16", "int8_bfloat16", "float16",
             "int8_float16")
    return tuple(t for t in order if t in offered) + tuple(sorted(offered - set(order)))


# report.json's precision names for CTranslate2's compute types
PRECISION_NAMES = {"float32": "fp32", "int8": "int8", "int8_float32": "int8_float32",
                   "bfloat16": "bf16", "int8_bfloat16": "int8_bf16", "float16": "fp16",
                   "int8_float16": "int8_fp16"}


@dataclass(frozen=True)
class PeerResult:
    """One request through the peer: its tokens and the marks of its first and last token."""
    tokens: tuple[int, ...]
    latency_ms: float
    first_token_ms: float              # from the call to the first generated token
    tpot_ms: float | None              # (last token − first token) / (n − 1), as infertop's


def save_checkpoint(model, tokenizer, folder: Path) -> Path:
    """The model and tokenizer as a transformers checkpoint under `folder`, for the peer's
    converter to read (in the peer's own process: probe/engine/peer_process.py)."""
    from transformers.utils import logging as hf_logging
    hf_dir = folder / "hf"
    hf_logging.disable_progress_bar()       # only infertop speaks on the terminal
    try:
        model.save_pretrained(hf_dir, safe_serialization=True)
        tokenizer.save_pretrained(hf_dir)
    finally:
        hf_logging.enable_progress_bar()
    return hf_dir


class PeerModel:
    """A checkpoint converted by CTranslate2's converter, and one translator per compute type."""

    def __init__(self, hf_dir: Path, *, threads: int | None = None) -> None:
        import ctranslate2
        from ctranslate2.converters import TransformersConverter
        ct2_dir = Path(hf_dir).parent / "ct2"
        TransformersConverter(str(hf_dir)).convert(str(ct2_dir), force=True)
        self.folder = ct2_dir
        vocabulary = json.loads((ct2_dir / "shared_vocabulary.json").read_text())
        self.tokens = list(vocabulary)
        self.ids = {token: i for i, token in enumerate(self.tokens)}
        if len(self.ids) != len(self.tokens):
            raise RuntimeError("the converted vocabulary has repeated tokens: ids cannot be "
                               "mapped to it one to one")
        self.threads = threads or 0
        self.compute_types = supported_compute_types("cpu")
        self._translators: dict[str, object] = {}
        self._ctranslate2 = ctranslate2

    def translator(self, compute_type: str):
        if compute_type not in self._translators:
            self._translators[compute_type] = self._ctranslate2.Translator(
                str(self.folder), device="cpu", compute_type=compute_type, inter_threads=1,
                intra_threads=self.threads)
        return self._translators[compute_type]

    def generate(self, compute_type: str, row: Sequence[int], output_length: int) -> PeerResult:
        """Greedy, exactly `output_length` tokens (the end token cannot stop it early)."""
        marks: list[float] = []

        def step(_result) -> bool:
            marks.append(time.perf_counter())
            return False

        source = [[self.tokens[i] for i in row]]
        start = time.perf_counter()
        result = self.translator(compute_type).translate_batch(
            source, beam_size=1, max_decoding_length=output_length,
            min_decoding_length=output_length, max_input_length=0, return_end_token=True,
            callback=step)[0]
        end = time.perf_counter()
        tokens = tuple(self.ids[t] for t in result.hypotheses[0])
        n = len(marks)
        return PeerResult(tokens=tokens, latency_ms=(end - start) * 1e3,
                          first_token_ms=((marks[0] if marks else end) - start) * 1e3,
                          tpot_ms=(marks[-1] - marks[0]) * 1e3 / (n - 1) if n > 1 else None)
