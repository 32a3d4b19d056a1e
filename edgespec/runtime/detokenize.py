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

import codecs
import re
from bisect import bisect_left
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from functools import cache
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
        if tail.endswith(REPLACEMENT) and not self._read_held().in_bytes:
            tail = tail.rstrip(REPLACEMENT) + REPLACEMENT  # the tokenizer's, unread bytes
        if tail:
            with self._lock:
                self._commit(tail)
            self._lengths[-1] = len(self.text)
        return tail

    def _push_one(self, token: int) -> None:
        self._tokens.append(token)
        held = self._read_held()
        self._tail = tail = held.text
        num_held = len(self._tokens) - self._read_offset
        if held.num_begun_tokens and held.num_begun_tokens < num_held:  # a character begun
            self._commit(held.done, len(self._tokens) - held.num_begun_tokens)  # after them
            self._lengths.append(len(self.text))
        elif tail and (not tail.endswith(REPLACEMENT) or (held.in_bytes and not held.begun)):
            self._commit(tail)  # complete characters, or bytes that make none
            self._lengths.append(len(self.text))
        elif num_held >= MAX_HELD_TOKENS:
            self._commit(tail)
            self._lengths.append(len(self.text))
        else:  # its complete characters so far, for a cut before the unfinished one
            complete = len(self.text) + len(tail.rstrip(REPLACEMENT))
            self._lengths.append(max(self._lengths[-1], complete))

    def _read_held(self) -> _Held:
        """The text of tokens[read_offset:], read after the step before's tokens unless
        they then read otherwise than alone (as a byte run left unfinished reads). Where
        it holds U+FFFD and every held token's bytes are known (:func:`known_token_bytes`),
        the bytes are read instead, as UTF-8 reads them (one U+FFFD for each ill-formed
        part, a tokenizer's byte fallback making one of each byte of a run that holds
        one), and a character begun at the end is held apart."""
        held = self._tokens[self._read_offset :]
        in_context = self._decode(self._tokens[self._prefix_offset :])
        if in_context.startswith(self._prefix_text):
            text = in_context[len(self._prefix_text) :]
        else:
            text = self._decode(held)
        if REPLACEMENT not in text:
            return _Held(text)
        pieces = [known_token_bytes(self._tokenizer, t, self._decode([t])) for t in held]
        if any(piece is None for piece in pieces):
            return _Held(text)
        raw = [piece for piece in pieces if piece is not None]
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        done = decoder.decode(b"".join(raw))
        begun = decoder.getstate()[0]
        if not begun:
            return _Held(done, done, True)
        return _Held(done + REPLACEMENT, done, True, True, _num_tokens_of(raw, len(begun)))

    def _commit(self, tail: str, end: int | None = None) -> None:
        """``tail`` joins the text; the tokens read (up to ``end``: the rest stay held)
        become the next step's context."""
        end = len(self._tokens) if end is None else end
        self.text += tail
        held = range(self._read_offset + 1, len(self._lengths))
        for n in held:  # none reaches past the text
            self._lengths[n] = min(self._lengths[n], len(self.text))
        self._prefix_text = self._decode(self._tokens[self._read_offset : end])
        self._prefix_offset, self._read_offset = self._read_offset, end
        self._tail = self._read_held().text if end < len(self._tokens) else ""

    def _decode(self, tokens: list[int]) -> str:
        return str(self._tokenizer.decode(tokens, skip_special_tokens=True))


@dataclass(frozen=True, slots=True)
class _Held:
    """The held tokens' text (a character begun at the end as one U+FFFD), read from
    their bytes (``in_bytes``) or as the tokenizer decodes them; ``done``: the text before
    the character begun; ``num_begun_tokens``: the tokens that hold its bytes (0: none,
    or they do not start at a token's start)."""

    text: str
    done: str = ""
    in_bytes: bool = False
    begun: bool = False
    num_begun_tokens: int = 0


def _num_tokens_of(pieces: Sequence[bytes], num_bytes: int) -> int:
    """How many of ``pieces``, at the end, hold exactly their last ``num_bytes`` bytes
    (0: a piece reaches before them)."""
    total = 0
    for count, piece in enumerate(reversed(pieces), start=1):
        total += len(piece)
        if total >= num_bytes:
            return count if total == num_bytes else 0
    return 0


BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")
"""A byte-fallback token's piece (SentencePiece's, Gemma's): the one byte it stands for."""


@cache
def _byte_level_bytes() -> dict[str, int]:
    """GPT-2's byte-level BPE alphabet: the character each byte is written as, inverted."""
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    chars, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            chars[chr(byte)] = byte
        else:
            chars[chr(256 + extra)] = byte
            extra += 1
    return chars


def known_token_bytes(tokenizer: Any, token_id: int, text: str) -> bytes | None:
    """The bytes token ``token_id`` (``text`` decoded alone) stands for: ``text``'s UTF-8
    when it decoded whole, else a byte-fallback piece's byte or a byte-level BPE piece's
    bytes (part of a character); ``None`` when neither applies."""
    if REPLACEMENT not in text:  # most tokens: no lookup of the piece
        return text.encode("utf-8")
    piece = tokenizer.convert_ids_to_tokens(int(token_id))
    piece = piece if isinstance(piece, str) else ""
    if (match := BYTE_PIECE.fullmatch(piece)) is not None:
        return bytes([int(match.group(1), 16)])
    if piece and all(c in _byte_level_bytes() for c in piece):
        return bytes(_byte_level_bytes()[c] for c in piece)
    return None


def token_bytes(tokenizer: Any, token_id: int, text: str) -> bytes:
    """:func:`known_token_bytes`, or ``text``'s UTF-8 (U+FFFD's) where they are not known."""
    known = known_token_bytes(tokenizer, token_id, text)
    return text.encode("utf-8", errors="replace") if known is None else known
