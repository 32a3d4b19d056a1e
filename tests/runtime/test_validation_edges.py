"""edgespec.runtime.validation at its boundaries: each check called directly with tiny
hand-built inputs, asserting the exact code and message (no model, no transport)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from edgespec.runtime.compact_probs import CompactProbs
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import VerifyCall
from edgespec.runtime.validation import (
    MAX_IDENTIFIER_CHARS,
    check_client_times,
    check_draft_probs,
    check_identifier,
    check_tree_call,
    check_vocab,
)


def _message(fn: Callable[[], None]) -> str:
    with pytest.raises(RequestError) as info:
        fn()
    assert info.value.code == ErrorCode.INVALID_ARGUMENT
    return info.value.message


def _call(
    tokens: tuple[int, ...], probs: list[list[float]] | None, parents: tuple[int, ...] | None = None
) -> VerifyCall:
    q = None if probs is None else np.asarray(probs, dtype=np.float32).reshape(len(probs), -1)
    return VerifyCall("s", 3, tokens, q, parents)


def test_identifier_limit_is_128_characters_inclusive() -> None:
    assert MAX_IDENTIFIER_CHARS == 128
    check_identifier("client_id", "c" * 128)
    assert _message(lambda: check_identifier("client_id", "c" * 129)) == (
        "client_id is 129 characters; the limit is 128"
    )


def test_vocab_bounds_are_half_open() -> None:
    check_vocab((0, 7), "draft token", 8)
    assert _message(lambda: check_vocab((0, 8), "draft token", 8)) == (
        "draft token 1 (id 8) is outside the vocabulary [0, 8)"
    )
    assert _message(lambda: check_vocab((-1,), "prompt token", 8)) == (
        "prompt token 0 (id -1) is outside the vocabulary [0, 8)"
    )


@pytest.mark.parametrize(
    ("draft_s", "network_s", "message"),
    [
        (-0.5, 0.0, "draft_s must be finite and >= 0, got -0.5"),
        (float("inf"), 0.0, "draft_s must be finite and >= 0, got inf"),
        (float("nan"), 0.0, "draft_s must be finite and >= 0, got nan"),
        (0.0, -0.5, "network_s must be finite and >= 0, got -0.5"),
        (0.0, float("inf"), "network_s must be finite and >= 0, got inf"),
        (0.0, float("nan"), "network_s must be finite and >= 0, got nan"),
    ],
)
def test_client_times_must_be_finite_and_non_negative(
    draft_s: float, network_s: float, message: str
) -> None:
    assert _message(lambda: check_client_times(draft_s, network_s)) == message


def test_client_times_of_zero_are_accepted() -> None:
    check_client_times(0.0, 0.0)
    check_client_times(0.25, 1.5)


def test_draft_probs_shape_names_both_dimensions() -> None:
    assert _message(lambda: check_draft_probs(_call((1,), None), 4)) == (
        "stochastic verification needs draft_probs"
    )
    wide = _call((1,), [[0.2, 0.2, 0.2, 0.2, 0.2]])
    assert _message(lambda: check_draft_probs(wide, 4)) == (
        "draft_probs has shape (1, 5), expected (1, 4)"
    )
    tall = _call((1,), [[0.25] * 4, [0.25] * 4])
    assert _message(lambda: check_draft_probs(tall, 4)) == (
        "draft_probs has shape (2, 4), expected (1, 4)"
    )


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -0.25])
def test_draft_probs_finite_and_non_negative(bad: float) -> None:
    """The first bad entry is named by its row, token and value (dense and compact q)."""
    call = _call((1, 0), [[0.5, 0.5, 0.0, 0.0], [0.5, 0.5, bad, bad]])
    assert _message(lambda: check_draft_probs(call, 4)) == (
        f"draft_probs row 1 gives token 2 {bad}: a probability is finite and >= 0"
    )
    compact = CompactProbs(np.array([0, 2, 4]), np.array([0, 1, 1, 3], np.int32),
                           np.array([0.5, 0.5, 0.5, bad], np.float32), 4)  # fmt: skip
    call = VerifyCall("s", 3, (1, 1), compact)
    assert _message(lambda: check_draft_probs(call, 4)) == (
        f"draft_probs row 1 gives token 3 {bad}: a probability is finite and >= 0"
    )


def test_draft_probs_rows_sum_to_one_within_tolerance() -> None:
    check_draft_probs(_call((1, 0), [[0.0, 1.0005, 0.0], [0.9995, 0.0, 0.0]]), 3)
    low = _call((1, 0), [[0.0, 1.0, 0.0], [0.5, 0.4, 0.0]])
    assert _message(lambda: check_draft_probs(low, 3)) == (
        "draft_probs row 1 sums to 0.9; a distribution sums to 1 (within 0.001)"
    )
    high = _call((1,), [[0.0, 1.002, 0.0]])
    assert _message(lambda: check_draft_probs(high, 3)) == (
        "draft_probs row 0 sums to 1.002; a distribution sums to 1 (within 0.001)"
    )


def test_draft_probs_own_token_must_be_possible() -> None:
    # row 1's own token (2) has probability 0 while token 1 has all of it: an index
    # swap (probs[tok, i]) would read row 2 / column 1 instead
    call = _call((0, 2, 1), [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    assert _message(lambda: check_draft_probs(call, 3)) == (
        "draft_probs row 1 gives its own draft token 2 probability 0"
    )
    check_draft_probs(_call((2, 0), [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]), 3)


def test_tree_call_parents_and_no_draft_probs() -> None:
    check_tree_call(_call((1, 2), None, (-1, 0)))
    assert _message(lambda: check_tree_call(_call((1, 2), None, (-1, 1)))) == (
        "draft tree node 1 has parent 1; it must be -1 or in 0..0"
    )
    assert _message(lambda: check_tree_call(_call((1, 2), None, (-1,)))) == (
        "draft tree has 1 parents for 2 tokens"
    )
    q = [[0.0, 1.0, 0.0]]
    assert _message(lambda: check_tree_call(_call((1,), q, (-1,)))) == (
        "a draft tree carries no draft_probs: its nodes are proposed for certain"
    )
