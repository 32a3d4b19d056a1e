"""The draft distribution on the wire (runtime/wire/codec.py): a block of γ = 4 sampled rows
over Gemma 3's 262,144-token vocabulary fits the default 4 MiB gRPC message with room to
spare and comes back bit for bit, and every malformed compact q is refused with its code
and message before anything of the vocabulary's size is allocated."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from edgespec.runtime.errors import ErrorCode
from edgespec.runtime.messages import VerifyCall
from edgespec.runtime.sampling import DRAFT_SUPPORT_MAX_TOKENS, draft_sample
from edgespec.runtime.wire.codec import call_from_proto, call_to_proto, pb
from tests.runtime.bad_cases import raises_request_error

GEMMA_VOCAB = 262_144
DEFAULT_MESSAGE_BYTES = 4 << 20


def _sampled_block(gamma: int, scale: float) -> tuple[tuple[int, ...], np.ndarray]:
    """γ rows a drafter at temperature 0.8 samples over random logits (``scale`` sets how
    flat they are: a flat row hits the support cap)."""
    rng = np.random.default_rng(0)
    tokens, rows = [], []
    for _ in range(gamma):
        logits = rng.standard_normal(GEMMA_VOCAB) * scale / 0.8
        probs = np.exp(logits - logits.max())
        token, q = draft_sample(probs / probs.sum(), rng, GEMMA_VOCAB)
        tokens.append(token)
        rows.append(q)
    return tuple(tokens), np.stack(rows)


@pytest.mark.parametrize("scale", [1.0, 8.0])
def test_a_sampled_262k_block_fits_the_default_message(scale: float) -> None:
    tokens, probs = _sampled_block(4, scale)
    assert probs.nbytes >= DEFAULT_MESSAGE_BYTES  # dense, it would not fit
    wire = call_to_proto(VerifyCall("s", 9, tokens, probs)).SerializeToString()
    per_row = DRAFT_SUPPORT_MAX_TOKENS * 9  # id varint (<= 3 bytes) + float32, + framing
    assert len(wire) <= 4 * per_row + 256
    back = call_from_proto(pb.VerifyRequest.FromString(wire), GEMMA_VOCAB, 32)
    assert back.draft_probs is not None and back.draft_probs.dtype == np.float32
    np.testing.assert_array_equal(back.draft_probs, probs)


def test_a_dense_q_from_an_older_client_is_still_read() -> None:
    request = pb.VerifyRequest(session_id="s", prefix_len=3, draft_token_ids=[1, 2])
    request.draft_probs.extend([0.25, 0.75, 0.0, 1.0, 0.0, 0.0])
    back = call_from_proto(request, 3, 32)
    assert back.draft_probs is not None
    np.testing.assert_array_equal(back.draft_probs, [[0.25, 0.75, 0.0], [1.0, 0.0, 0.0]])


def _compact(sizes: list[int], ids: list[int], values: list[float]) -> Callable[[Any], None]:
    def fill(request: Any) -> None:
        request.draft_support_sizes.extend(sizes)
        request.draft_support_ids.extend(ids)
        request.draft_probs.extend(values)

    return fill


@pytest.mark.parametrize(
    ("fill", "message"),
    [
        (_compact([1], [1], [1.0]), "draft_support_sizes has 1 entries for 2 draft tokens"),
        (
            _compact([1, 2], [1, 0], [1.0, 1.0]),
            "draft_support_sizes add up to 3, but draft_support_ids has 2 and draft_probs 2 "
            "entries",
        ),
        (
            _compact([1, 1], [1, 9], [1.0, 1.0]),
            "draft_support_ids holds token 9, outside the target's vocabulary of 5",
        ),
        (
            _compact([1, 2], [1, 2, 2], [1.0, 0.5, 0.5]),
            "draft_support_ids repeats a token in a row",
        ),
    ],
)
def test_a_malformed_compact_q_is_refused(fill: Callable[[Any], None], message: str) -> None:
    request = pb.VerifyRequest(session_id="s", prefix_len=3, draft_token_ids=[1, 2])
    fill(request)
    raises_request_error(ErrorCode.INVALID_ARGUMENT, message, call_from_proto, request, 5, 32)


def test_a_compact_q_longer_than_the_draft_limit_is_refused_before_it_is_expanded() -> None:
    """A message of a few hundred bytes must not make the server allocate blocks × vocab."""
    request = pb.VerifyRequest(session_id="s", prefix_len=3, draft_token_ids=[1] * 100)
    _compact([1] * 100, [1] * 100, [1.0] * 100)(request)
    raises_request_error(
        ErrorCode.INVALID_ARGUMENT,
        "draft block has 100 tokens; the limit is 32",
        call_from_proto,
        request,
        GEMMA_VOCAB,
        32,
    )
