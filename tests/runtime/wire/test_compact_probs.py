"""The draft distribution on the wire (runtime/wire/codec.py): a block of γ = 4 sampled rows
over Gemma 3's 262,144-token vocabulary fits the default 4 MiB gRPC message with room to
spare and comes back bit for bit, every malformed compact q is refused with its code and
message, and a compact q is read and checked without anything of the vocabulary's size
being allocated: the server holds it as sent (runtime/compact_probs.py)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from edgespec.core.link_delay import DraftRows, draft_probs_row_bytes
from edgespec.core.wire_limits import DRAFT_SUPPORT_MAX_TOKENS
from edgespec.runtime.compact_probs import CompactProbs
from edgespec.runtime.errors import ErrorCode
from edgespec.runtime.messages import VerifyCall
from edgespec.runtime.sampling import draft_sample
from edgespec.runtime.validation import check_draft_probs
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
    assert isinstance(back.draft_probs, CompactProbs)
    assert back.draft_probs.values.dtype == np.float32
    np.testing.assert_array_equal(back.draft_probs.dense(), probs)


@pytest.mark.parametrize("scale", [1.0, 8.0])
def test_the_compact_rows_cost_at_most_what_the_link_model_charges(scale: float) -> None:
    """The simulator's and the emulated link's ``compact`` rows (core/link_delay.py) bound
    what a sampled block's q adds to the message, and are tight when a row keeps its cap."""
    tokens, probs = _sampled_block(4, scale)
    with_q = len(call_to_proto(VerifyCall("s", 9, tokens, probs)).SerializeToString())
    without = len(call_to_proto(VerifyCall("s", 9, tokens, None)).SerializeToString())
    charged = 4 * draft_probs_row_bytes(GEMMA_VOCAB, DraftRows("compact"))
    framing = 3 * (1 + 3)  # three packed fields: a tag and a length varint each
    assert with_q - without <= charged + framing
    if (np.count_nonzero(probs, axis=1) == DRAFT_SUPPORT_MAX_TOKENS).all():
        assert with_q - without >= 0.95 * charged


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
            "draft_support_ids[1] (row 1) is token 9, outside the target's vocabulary of 5",
        ),
        (
            _compact([1, 2], [1, 2, 2], [1.0, 0.5, 0.5]),
            "draft_support_ids gives row 1 token 2 twice",
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


def _full_block_request(k: int = 32) -> Any:
    """A sampled block of ``k`` one-token rows: a few hundred bytes on the wire."""
    request = pb.VerifyRequest(session_id="s", prefix_len=3, draft_token_ids=[1] * k)
    _compact([1] * k, [1] * k, [1.0] * k)(request)
    return request


def test_a_262k_compact_q_is_read_and_checked_in_memory_linear_in_its_message() -> None:
    """K = 32 rows over Gemma 3's vocabulary in 238 bytes: decoded and checked (what the
    event loop does before the call is queued) without allocating K x V floats (32 MiB),
    and held in a few bytes per byte sent."""
    request = _full_block_request()
    wire_bytes = request.ByteSize()
    tracemalloc.start()
    try:
        call = call_from_proto(request, GEMMA_VOCAB, 32)
        check_draft_probs(call, GEMMA_VOCAB)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert wire_bytes < 300
    assert peak < 64 << 10, f"decoding and checking peaked at {peak} bytes"
    assert call.draft_probs is not None and call.draft_probs.shape == (32, GEMMA_VOCAB)
    assert call.draft_probs.nbytes <= 4 * wire_bytes


def test_a_rows_entries_in_any_order_read_as_the_dense_row() -> None:
    """Each row's entries are put in token order, as the dense row would hold them."""
    request = pb.VerifyRequest(session_id="s", prefix_len=3, draft_token_ids=[3, 2])
    _compact([2, 2], [3, 1, 4, 2], [0.75, 0.25, 0.5, 0.5])(request)
    q = call_from_proto(request, 5, 32).draft_probs
    assert isinstance(q, CompactProbs)
    assert (q.offsets.tolist(), q.ids.tolist()) == ([0, 2, 4], [1, 3, 2, 4])
    np.testing.assert_array_equal(q.dense(), [[0, 0.25, 0, 0.75, 0], [0, 0, 0.5, 0, 0.5]])
