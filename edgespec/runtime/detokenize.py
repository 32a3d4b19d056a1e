"""Token ids to text a token at a time, showing complete characters only: what the
OpenAI-compatible endpoint returns (:mod:`.openai_api.text`) and ``edgespec draft`` prints.

A character missing from the vocabulary is written as one byte token each (``<0xF0>`` …),
and a tokenizer decodes an unbroken run of byte tokens that ends partway through a
character as one U+FFFD per byte, the complete characters before it included. So the text
is never the whole output decoded at once: each token decodes only the tokens since the
last point where the text was complete, after the tokens of the step before (so that a
tokenizer's handling of a leading space reads as in the whole, as in vLLM's incremental
detokenizer), and text that ends in U+FFFD is held until a later token completes it."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

REPLACEMENT = "\ufffd"

MAX_HELD_TOKENS = 8
"""A character takes at most 4 bytes: text still unfinished this many tokens after the last
complete point is no character being written but bytes that never make one, and is taken
as the tokenizer decodes it (which bounds what each token decodes)."""


class IncrementalText:
    """The text of the tokens pushed so far, complete characters only (``text``);
    ``finish`` adds the text still held once the output has ended, an unfinished last
    character as one U+FFFD. The tokenizer's special tokens are not in the text; ``lock``
    is held while the tokenizer runs. ``num_tokens_for`` counts the tokens of any cut of
    the text exactly."""

    __slots__ = ("_lengths", "_lock", "_prefix_offset", "_prefix_text", "_read_offset",
                 "_tail", "_tokenizer", "_tokens", "text")  # fmt: skip

    def __init__(self, tokenizer: Any, lock: AbstractContextManager[Any] | None = None) -> None:
        self._tokenizer = tokenizer
        self._lock = lock if lock is not None else nullcontext()
        self._tokens: list[int] = []
        self._prefix_offset = 0  # tokens[prefix_offset:read_offset]: the step before's
        self._read_offset = 0  # tokens[:read_offset]: those whose text is in ``text``
        self._prefix_text = ""  # the step before's tokens decoded alone
        self._tail = ""  # the text held: that of tokens[read_offset:]
        # the complete characters the first n tokens make, for every n
        self._lengths = [0]
        self.text = ""

    @property
    def num_tokens(self) -> int:
        return len(self._tokens)

    def num_chars_for(self, num_tokens: int) -> int:
        """The complete characters the first ``num_tokens`` tokens make (all of them, when
        fewer have come)."""
        return self._lengths[min(num_tokens, len(self._lengths) - 1)]

    def num_tokens_for(self, num_chars: int) -> int:
        """The fewest leading tokens whose text reaches ``num_chars`` characters (a token
        partly inside them counts)."""
        return bisect_left(self._lengths, num_chars)

    def push(self, tokens: Sequence[int]) -> str:
        """Add ``tokens``; the text they complete."""
        start = len(self.text)
        with self._lock:
            for token in tokens:
                self._push_one(token)
        return self.text[start:]

    def finish(self) -> str:
        """The text still held, its unfinished last character as one U+FFFD: the output has
        ended."""
        tail = self._tail
        if tail.endswith(REPLACEMENT):
            tail = tail.rstrip(REPLACEMENT) + REPLACEMENT
        if tail:
            with self._lock:
                self._commit(tail)
            self._lengths[-1] = len(self.text)
        return tail

    def _push_one(self, token: int) -> None:
        self._tokens.append(token)
        self._tail = tail = self._held_text()
        num_held = len(self._tokens) - self._read_offset
        if num_held >= MAX_HELD_TOKENS or (tail and not tail.endswith(REPLACEMENT)):
            self._commit(tail)
            self._lengths.append(len(self.text))
        else:  # its complete characters so far, for a cut before the unfinished one
            complete = len(self.text) + len(tail.rstrip(REPLACEMENT))
            self._lengths.append(max(self._lengths[-1], complete))

    def _held_text(self) -> str:
        """The text of tokens[read_offset:], read after the step before's tokens unless
        they then read otherwise than alone (as a byte run left unfinished reads)."""
        in_context = self._decode(self._tokens[self._prefix_offset :])
        if in_context.startswith(self._prefix_text):
            return in_context[len(self._prefix_text) :]
        return self._decode(self._tokens[self._read_offset :])

    def _commit(self, tail: str) -> None:
        """``tail`` joins the text; the tokens read become the next step's context."""
        self.text += tail
        held = range(self._read_offset + 1, len(self._lengths))
        for n in held:  # none reaches past the text
            self._lengths[n] = min(self._lengths[n], len(self.text))
        self._prefix_text = self._decode(self._tokens[self._read_offset :])
        self._prefix_offset, self._read_offset = self._read_offset, len(self._tokens)
        self._tail = ""

    def _decode(self, tokens: list[int]) -> str:
        return str(self._tokenizer.decode(tokens, skip_special_tokens=True))
