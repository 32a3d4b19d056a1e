"""The word-level tokenizer the tests build (CI has no model hub): each word of a list is one
token, its id its place in the list; words ``w0`` … ``w{V-1}`` by default. Text splits on
whitespace; decoding joins the words without spaces (``fuse``), so chunks decoded one by
one read as the whole decoded at once. transformers and tokenizers are imported when one is
built, so a test module that skips without them can import this one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast


def word_vocab(size: int, named: Mapping[int, str] | None = None) -> list[str]:
    """Words ``w0`` … ``w{size-1}`` in id order, but the ids in ``named`` named as given
    there (special tokens such as ``{0: "<pad>"}``)."""
    names = dict(named or {})
    outside = sorted(i for i in names if not 0 <= i < size)
    if outside:
        raise ValueError(f"word_vocab: named ids {outside} are outside 0 … {size - 1}")
    return [names.get(i, f"w{i}") for i in range(size)]


def make_word_tokenizer(
    words: int | Sequence[str],
    *,
    unk_token: str = "w0",
    unk_special: bool = True,
    fuse: bool = True,
    bos_token: str | None = None,
    eos_token: str | None = None,
    pad_token: str | None = None,
    special_tokens: Sequence[str] | None = None,
    chat_template: str | None = None,
) -> PreTrainedTokenizerFast:
    """A fast tokenizer over ``words`` (a count means :func:`word_vocab` of it).

    Unknown text is ``unk_token``, also the tokenizer's UNK special token if
    ``unk_special``; ``fuse``: decoding joins words without spaces (else no decoder); the
    BOS, EOS and PAD tokens and further ``special_tokens`` (not in decoded text) as given;
    ``chat_template`` set when given."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab_words = word_vocab(words) if isinstance(words, int) else list(words)
    vocab = {word: i for i, word in enumerate(vocab_words)}
    if len(vocab) != len(vocab_words):
        raise ValueError(f"make_word_tokenizer: repeated words in {vocab_words}")
    core = Tokenizer(models.WordLevel(vocab, unk_token=unk_token))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    if fuse:
        core.decoder = decoders.Fuse()
    roles = {"bos_token": bos_token, "eos_token": eos_token, "pad_token": pad_token}
    roles["unk_token"] = unk_token if unk_special else None
    given: dict[str, str | list[str]] = {r: t for r, t in roles.items() if t is not None}
    if special_tokens is not None:
        given["extra_special_tokens"] = list(special_tokens)
    # transformers' tokenizer constructor is unannotated
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, **given)  # type: ignore[no-untyped-call]
    if chat_template is not None:
        tokenizer.chat_template = chat_template
    return tokenizer
