"""Tokenizers whose text is byte tokens where a character is missing from the vocabulary:
a tiny one built here (``<0x00>`` … ``<0xFF>`` as ids 0 … 255, a few words, Gemma's
decoder: ``▁`` as a space, byte fallback, fuse) and Gemma 3 270M's own 262k tokenizer
(loaded alone, no weights; a test skips without it); and a byte-level one (GPT-2's
scheme) whose token ``¿ð`` ends one character and begins the next. Each decodes a run of
byte tokens that ends partway through a character as U+FFFD for every byte of the run."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

END_OF_TURN = "<end_of_turn>"
EOS = "<eos>"
WORDS = ("▁", "a", "b", "h", "i", "hi", "▁hi", "▁a", END_OF_TURN, EOS)


def tiny_byte_tokenizer() -> Any:
    """Byte tokens for all but ``a``, ``b``, ``h``, ``i`` and a space; ``<end_of_turn>``
    and ``<eos>`` special."""
    from tokenizers import Tokenizer, decoders, models, normalizers
    from transformers import PreTrainedTokenizerFast

    names = [f"<0x{b:02X}>" for b in range(256)] + list(WORDS)
    vocab = {name: i for i, name in enumerate(names)}
    merges = [("h", "i"), ("▁", "hi"), ("▁", "a")]
    core = Tokenizer(models.BPE(vocab, merges, byte_fallback=True))
    core.normalizer = normalizers.Replace(" ", "▁")
    core.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=core, eos_token=EOS, extra_special_tokens=[END_OF_TURN]
    )


@cache
def _gemma() -> Any:
    from edgespec.models.loading import load_tokenizer

    try:
        return load_tokenizer("gemma3-270m")
    except Exception:  # a model cut off, a library missing: no Gemma here
        return None


def gemma_tokenizer() -> Any:
    """Gemma 3 270M's tokenizer (loaded once), or the test skips."""
    tokenizer = _gemma()
    if tokenizer is None:
        pytest.skip("Gemma 3 270M's tokenizer is not here")
    return tokenizer


def byte_tokenizer(name: str) -> Any:
    """``tiny`` or ``gemma``."""
    return tiny_byte_tokenizer() if name == "tiny" else gemma_tokenizer()


def ids(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def _byte_chars() -> list[str]:
    """GPT-2's printable stand-in for each byte, in byte order."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    shifted = iter(range(256, 512))
    return [chr(b) if b in printable else chr(next(shifted)) for b in range(256)]


def byte_level_tokenizer() -> tuple[Any, dict[bytes, int]]:
    """A byte-level tokenizer: one token a byte, and ``¿ð`` (bytes BF F0) one token; and
    each token's id by its bytes."""
    from tokenizers import Tokenizer, decoders, models
    from transformers import PreTrainedTokenizerFast

    chars = _byte_chars()
    vocab = {c: b for b, c in enumerate(chars)}
    vocab[chars[0xBF] + chars[0xF0]] = 256
    core = Tokenizer(models.BPE(vocab, [(chars[0xBF], chars[0xF0])]))
    core.decoder = decoders.ByteLevel()
    by_bytes = {bytes([b]): b for b in range(256)} | {b"\xbf\xf0": 256}
    return PreTrainedTokenizerFast(tokenizer_object=core), by_bytes
