"""An offline tokenizer for the embedded model: one token per UTF-8 byte.

The embedded T5 has random weights, so no trained vocabulary means anything to it; what matters
is that text becomes a realistic number of tokens without touching the network. Built with the
`tokenizers` library (byte-level BPE with no merges) and wrapped as a transformers tokenizer.
"""

from __future__ import annotations

from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

SPECIAL_TOKENS = ("<pad>", "</s>", "<unk>")
BYTE_VOCAB_SIZE = len(SPECIAL_TOKENS) + 256


def byte_tokenizer() -> PreTrainedTokenizerFast:
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {token: i for i, token in enumerate(SPECIAL_TOKENS)}
    for symbol in sorted(alphabet):
        vocab[symbol] = len(vocab)
    core = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", eos_token="</s>",
                                   unk_token="<unk>")
