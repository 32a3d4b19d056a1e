"""A model folder the real-pair commands can load by path (``--target DIR``): a tiny Llama
(context 4,096) with a word-level tokenizer ``w0`` … ``w63`` (CI has no model hub)."""

from __future__ import annotations

from pathlib import Path


def save_tiny_model(directory: Path) -> Path:
    """Save the model and its tokenizer into ``directory``; returns it."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from edgespec.runtime.testing import tiny_llama

    model = tiny_llama(seed=0)
    model.save_pretrained(directory)
    vocab = {f"w{i}": i for i in range(model.config.vocab_size)}
    core = Tokenizer(models.WordLevel(vocab, unk_token="w0"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    core.decoder = decoders.Fuse()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="w0")  # type: ignore[no-untyped-call]
    tokenizer.save_pretrained(directory)
    return directory
