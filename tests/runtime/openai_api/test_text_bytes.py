"""The endpoint's text (:class:`~edgespec.runtime.openai_api.text.TextStream`) of outputs
written in byte tokens, with a tiny byte-fallback tokenizer and Gemma 3 270M's own: the
complete characters always survive a cut (``max_tokens``, an end of turn), an unfinished
last one is one U+FFFD, the deltas joined are the text whatever the rounds, and
``usage.completion_tokens`` is exact under a stop sequence (the reviewer's cases at the
real vocabulary: ``Geese: 🪿…`` at ``max_tokens`` 13, ``stop`` ``𠀁`` counted 5 of 17)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgespec.runtime.detokenize import MAX_HELD_TOKENS
from edgespec.runtime.openai_api.text import TextStream
from tests.runtime.openai_api.byte_tokenizer import (
    END_OF_TURN,
    byte_level_tokenizer,
    byte_tokenizer,
    ids,
    tiny_byte_tokenizer,
)

GOOSE = "🪿"  # U+1FABF: 4 byte tokens in both
FFFD = "\ufffd"


@pytest.fixture(params=["tiny", "gemma"])
def tokenizer(request: pytest.FixtureRequest) -> Any:
    return byte_tokenizer(request.param)


def _run(
    tokenizer: Any, tokens: Sequence[int], rounds: Sequence[int], stops: tuple[str, ...] = (),
    stop_ids: frozenset[int] = frozenset(), min_tokens: int = 0,
) -> tuple[TextStream, list[str]]:  # fmt: skip
    """``tokens`` committed ``rounds[i]`` at a time (the rest at once), as run_request
    pushes them: until a stop, then ``finish`` if none; the stream and its deltas."""
    text, deltas, start = TextStream(tokenizer, stops, stop_ids, min_tokens), [], 0
    for size in [*rounds, len(tokens)]:
        if start >= len(tokens) or text.stopped:
            break
        deltas.append(text.push(tuple(tokens[start : start + size])))
        start += size
    if not text.stopped:
        deltas.append(text.finish())
    return text, deltas


@pytest.mark.parametrize("rounds", [[5, 4, 4], [1] * 13, [13], [3, 9, 1]])
def test_a_reply_cut_mid_character_keeps_its_complete_characters(
    tokenizer: Any, rounds: list[int]
) -> None:
    """max_tokens 13 after ``Geese: 🪿…``: three geese and one byte of the fourth."""
    tokens = ids(tokenizer, GOOSE * 4)[:13]
    text, deltas = _run(tokenizer, tokens, rounds)
    assert text.text == GOOSE * 3 + FFFD  # was 13 × U+FFFD
    assert "".join(deltas) == text.text  # was 🪿🪿🪿 and 10 × U+FFFD streamed
    assert (text.stopped, text.num_tokens) == (False, 13)


def test_an_end_of_turn_mid_character_keeps_the_complete_ones(tokenizer: Any) -> None:
    end = tokenizer.convert_tokens_to_ids(END_OF_TURN)
    tokens = [*ids(tokenizer, GOOSE * 3)[:10], end, *ids(tokenizer, "hi")]
    text, deltas = _run(tokenizer, tokens, [6, 6], stop_ids=frozenset({end}))
    assert (text.text, "".join(deltas)) == (GOOSE * 2 + FFFD, GOOSE * 2 + FFFD)
    assert (text.stopped, text.num_tokens) == (True, 10)


@pytest.mark.parametrize("rounds", [[1] * 24, [5] * 5, [24], [13, 11]])
def test_a_stop_in_byte_tokens_counts_the_tokens_of_the_text(
    tokenizer: Any, rounds: list[int]
) -> None:
    """The reply to ``𠀀𠀁𠀂𠀃𠀄 …`` at max_tokens 24, stop ``𠀁``: 3 × 4 bytes, a space, 4."""
    tokens = ids(tokenizer, "𠀂𠀃𠀄 𠀀𠀁𠀂")[:24]
    text, deltas = _run(tokenizer, tokens, rounds, ("𠀁",))
    assert (text.text, "".join(deltas)) == ("𠀂𠀃𠀄 𠀀", "𠀂𠀃𠀄 𠀀")
    assert (text.stopped, text.num_tokens) == (True, 17)  # was 5


def test_a_token_that_ends_one_character_and_begins_the_next_counts_once() -> None:
    """Byte-level BPE: ``¿ð`` ends 🪿 and begins 𠀀, so ``stop`` 𠀀 leaves 🪿 and 4 tokens."""
    tokenizer, by_bytes = byte_level_tokenizer()
    tokens = [by_bytes[b"\xf0"], by_bytes[b"\x9f"], by_bytes[b"\xaa"], by_bytes[b"\xbf\xf0"],
              by_bytes[b"\xa0"], by_bytes[b"\x80"], by_bytes[b"\x80"]]  # fmt: skip
    for rounds in ([1] * 7, [7], [4, 3]):
        text, deltas = _run(tokenizer, tokens, rounds, ("𠀀",))
        assert (text.text, "".join(deltas), text.num_tokens) == (GOOSE, GOOSE, 4)  # was 1
    text, deltas = _run(tokenizer, tokens[:5], [2])
    assert (text.text, "".join(deltas), text.num_tokens) == (GOOSE + FFFD, GOOSE + FFFD, 5)


class Counting:
    """A tokenizer that keeps the longest list of tokens it was asked to decode."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer, self.longest = tokenizer, 0

    def decode(self, tokens: list[int], skip_special_tokens: bool) -> str:
        self.longest = max(self.longest, len(tokens))
        return str(self.tokenizer.decode(tokens, skip_special_tokens=skip_special_tokens))

    def convert_ids_to_tokens(self, token_id: int) -> Any:
        return self.tokenizer.convert_ids_to_tokens(token_id)


def test_bytes_that_never_make_a_character_read_as_decoded_and_bound_each_decode() -> None:
    """200 continuation bytes (no character begins) then ``a``: U+FFFD each, as decoding
    the whole says, while no decode takes more than 2 × MAX_HELD_TOKENS tokens."""
    tiny = tiny_byte_tokenizer()
    tokens = [0x80] * 200 + ids(tiny, "a")
    counting = Counting(tiny)
    text, deltas = _run(counting, tokens, [4] * 60)
    assert text.text == "".join(deltas) == tiny.decode(tokens) == FFFD * 200 + "a"
    assert counting.longest <= 2 * MAX_HELD_TOKENS  # was the whole output: 201


def _byte(tokenizer: Any, value: int) -> int:
    return int(tokenizer.convert_tokens_to_ids(f"<0x{value:02X}>"))


@pytest.mark.parametrize("num", [1, 2, 5, 7, 8, 9, 10, 17])
def test_lead_bytes_that_begin_no_character_read_one_each(tokenizer: Any, num: int) -> None:
    """``<0xF0>`` over and over (a forced logit bias): each one followed by another begins
    no character and is one U+FFFD, as the tokenizer decodes it; the last, begun, one too.
    The held run was one U+FFFD in all below 8 tokens (7 → 1, 8 → 8, 10 → 9)."""
    tokens = [_byte(tokenizer, 0xF0)] * num
    for rounds in ([1] * num, [num], [3] * 6):
        text, deltas = _run(tokenizer, tokens, rounds)
        assert text.text == "".join(deltas) == str(tokenizer.decode(tokens)) == FFFD * num


def test_a_character_begun_at_the_held_limit_is_kept_whole(tokenizer: Any) -> None:
    """Seven bytes that make no character, then 🪿's four: the held limit (8 tokens) falls
    inside 🪿, which was cut there into 4 × U+FFFD; the bytes of a character begun stay
    held past it."""
    tokens = [_byte(tokenizer, 0xF0)] * 7 + ids(tokenizer, GOOSE)
    for rounds in ([1] * 11, [11], [8, 3], [6, 5]):
        text, deltas = _run(tokenizer, tokens, rounds)
        assert text.text == "".join(deltas) == FFFD * 7 + GOOSE
        assert text.num_tokens == 11
    text, deltas = _run(tokenizer, tokens[:9], [1] * 9)  # cut inside 🪿: one U+FFFD for it
    assert text.text == "".join(deltas) == FFFD * 8


PIECES = ["a", "b", " ", "hi", " hi", " a", "é", "中", GOOSE, "𠀀", "𠀁"]


def _expected(tokenizer: Any, tokens: list[int], stops: tuple[str, ...]) -> tuple[str, int]:
    """From decoding each prefix whole: the text (complete characters; an unfinished last
    one U+FFFD) cut before the first stop, and the fewest tokens that reach the cut."""
    decoded = [str(tokenizer.decode(tokens[:n])) for n in range(len(tokens) + 1)]
    whole = [n for n, text in enumerate(decoded) if not text.endswith(FFFD)]
    # the text of the longest prefix of n tokens that decodes whole
    complete = [decoded[max(j for j in whole if j <= n)] for n in range(len(tokens) + 1)]
    full = complete[-1] + (FFFD if whole[-1] < len(tokens) else "")
    hits = [i for i in (full.find(s) for s in stops) if i >= 0]
    if not hits:
        return full, len(tokens)
    cut = min(hits)
    return full[:cut], next(n for n, text in enumerate(complete) if len(text) >= cut)


@pytest.mark.parametrize("name", ["tiny", "gemma"])
@settings(max_examples=100, deadline=None)
@given(
    pieces=st.lists(st.sampled_from(PIECES), min_size=1, max_size=12),
    cut=st.integers(min_value=0, max_value=60),
    rounds=st.lists(st.integers(min_value=1, max_value=9), max_size=12),
    stops=st.lists(st.sampled_from(PIECES), max_size=2),
)
def test_every_cut_and_stop_streams_the_text_it_returns(
    name: str, pieces: list[str], cut: int, rounds: list[int], stops: list[str]
) -> None:
    """Any cut point (``max_tokens``), rounds and stop strings: the deltas joined are the
    text, which is the complete characters, cut at the first stop, with exact
    ``num_tokens``; ordinary text reads as it is."""
    tokenizer = byte_tokenizer(name)
    tokens = ids(tokenizer, "".join(pieces))[:cut]
    text, deltas = _run(tokenizer, tokens, rounds, tuple(stops))
    assert "".join(deltas) == text.text
    assert (text.text, text.num_tokens) == _expected(tokenizer, tokens, tuple(stops))


@settings(max_examples=150, deadline=None)
@given(
    pieces=st.lists(st.sampled_from(["a", "b", " ", "ab", " a"]), min_size=1, max_size=16),
    rounds=st.lists(st.integers(min_value=1, max_value=4), max_size=16),
    stops=st.lists(st.sampled_from(["a", "ab", "b a", " "]), min_size=1, max_size=2),
    min_tokens=st.integers(min_value=0, max_value=12),
)
def test_min_tokens_counts_a_stop_from_the_first_that_ends_late_enough(
    pieces: list[str], rounds: list[int], stops: list[str], min_tokens: int
) -> None:
    """Each delta searches only the text a stop could newly end in; a stop counts from
    where it ends in the ``min_tokens``-th token's text or later (every occurrence before
    it skipped), however the rounds fall."""
    tokenizer = byte_tokenizer("tiny")
    tokens = ids(tokenizer, "".join(pieces))
    text, deltas = _run(tokenizer, tokens, rounds, tuple(stops), min_tokens=min_tokens)
    full = str(tokenizer.decode(tokens))  # ASCII: every prefix decodes whole
    bound = str(tokenizer.decode(tokens[: max(min_tokens - 1, 0)]))
    after = len(full) if min_tokens > len(tokens) else len(bound)
    found = (full.find(s, max(after - len(s) + 1, 0)) for s in stops)
    hits = [i for i in found if i >= 0]
    assert text.text == (full[: min(hits)] if hits else full) == "".join(deltas)


class Scanned(str):
    """A text whose ``find`` adds up the characters it was asked to search."""

    searched = 0

    def find(self, sub: Any, start: Any = 0, end: Any = None) -> int:
        Scanned.searched += len(self) - start
        return super().find(sub, start)


class Watched:
    """An :class:`IncrementalText` whose text is :class:`Scanned`."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @property
    def text(self) -> Scanned:
        return Scanned(self.inner.text)


def test_each_character_is_searched_for_a_stop_a_bounded_number_of_times() -> None:
    """2,000 tokens one a round: the stop search scans what is new (and a stop's length
    before it), not the whole text each round (which made a long reply quadratic)."""
    tokenizer = byte_tokenizer("tiny")
    stream = TextStream(tokenizer, ("zz", "xyz"))
    stream._decoded = Watched(stream._decoded)  # type: ignore[assignment]
    Scanned.searched = 0
    tokens = ids(tokenizer, "ab " * 1000)
    for token in tokens:
        stream.push((token,))
    assert stream.text == "ab " * 1000 and len(tokens) >= 2000
    assert Scanned.searched <= 2 * (3000 + len(tokens) * 2)  # was the whole text twice a round
