"""A model folder the real-pair commands can load by path (``--target DIR``): a tiny Llama
(context 4,096) with a word-level tokenizer ``w0`` … ``w63`` (CI has no model hub)."""

from __future__ import annotations

from pathlib import Path

from tests.word_tokenizer import make_word_tokenizer


def save_tiny_model(directory: Path) -> Path:
    """Save the model and its tokenizer into ``directory``; returns it."""
    from edgespec.runtime.testing import tiny_llama

    model = tiny_llama(seed=0)
    model.save_pretrained(directory)
    make_word_tokenizer(model.config.vocab_size).save_pretrained(directory)
    return directory
