"""A ``return_hidden`` session's first reply carries its prompt's hidden rows. One over the
server's ``max_message_bytes`` failed as it was sent (``RESOURCE_EXHAUSTED: Sent message
larger than max``) after its round committed, and every retry of the round got the same
reply: such a session is refused at ``OpenSession``, saying the longest prompt that fits;
that prompt opens and its largest first reply arrives."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
import numpy as np
import pytest

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.base import ForwardItem
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.messages import SessionSpec
from edgespec.runtime.wire.codec import hidden_from_bytes, pb, spec_to_proto
from edgespec.runtime.wire.grpc_common import pb_grpc
from edgespec.runtime.wire.inprocess import target_greedy_decode
from edgespec.runtime.wire.reply_size import max_reply_bytes
from tests.runtime.conftest import ServerFactory

LIMIT = 4096  # bytes
MAX_DRAFT = 8
MAX_NEW = 8
FITS = 42  # prompt tokens: 42 + 8 rows of 32 float16 values and the other fields, <= 4096


def _prompt(length: int) -> tuple[int, ...]:
    return tuple((5 * j + 1) % 64 for j in range(length))


def _open(stub: Any, sid: str, prompt: tuple[int, ...], return_hidden: bool = True) -> Any:
    spec = SessionSpec(sid, "c", prompt, SamplingParams(max_new_tokens=MAX_NEW),
                       return_hidden=return_hidden)  # fmt: skip
    return stub.OpenSession(spec_to_proto(spec), timeout=10)


@pytest.fixture
def stub(make_server: ServerFactory) -> Iterator[Any]:
    server = make_server(max_message_bytes=LIMIT, max_draft_tokens=MAX_DRAFT)
    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        yield pb_grpc.VerificationStub(channel)


def test_a_prompt_whose_first_reply_cannot_be_sent_is_refused_at_open(stub: Any) -> None:
    with pytest.raises(grpc.RpcError) as info:
        _open(stub, "big", _prompt(FITS + 1))
    assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.details() == (
        "return_hidden: the session's first reply carries the target's hidden states of its "
        "43 prompt tokens and up to 8 accepted draft tokens (51 rows of 32 float16 values): "
        "up to 4,150 bytes, over this server's max_message_bytes of 4,096; shorten the prompt "
        "(at most 42 tokens fit), or raise max_message_bytes on the server and the client "
        "(edgespec draft --max-message-bytes)"
    )
    stats = stub.Stats(pb.StatsRequest(), timeout=10)
    assert (stats.num_sessions, stats.num_rejected) == (0, 1)
    _open(stub, "plain", _prompt(FITS + 1), return_hidden=False)  # the same prompt, no rows
    reply = stub.Verify(pb.VerifyRequest(session_id="plain", prefix_len=FITS + 1), timeout=10)
    assert len(reply.committed_token_ids) == 1 and not reply.target_hidden


def test_the_longest_prompt_that_fits_opens_and_its_largest_first_reply_arrives(
    stub: Any, target: TransformersTarget
) -> None:
    """Every drafted token accepted: the reply carries the most rows a first reply can; a
    prompt one token longer is refused."""
    with pytest.raises(grpc.RpcError) as info:
        _open(stub, "over", _prompt(FITS + 1))
    assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "(at most 42 tokens fit)" in str(info.value.details())
    prompt = _prompt(FITS)
    _open(stub, "fits", prompt)
    reference = target_greedy_decode(target, prompt, MAX_NEW)
    request = pb.VerifyRequest(session_id="fits", prefix_len=FITS, draft_token_ids=reference)
    reply = stub.Verify(request, timeout=10)
    assert tuple(reply.committed_token_ids) == reference and reply.finished
    rows = hidden_from_bytes(reply.target_hidden, reply.hidden_size)
    assert rows is not None and rows.shape == (FITS + MAX_NEW, 32)
    assert reply.ByteSize() <= max_reply_bytes(FITS + MAX_NEW, 32, MAX_DRAFT) <= LIMIT
    sequence = (*prompt, *reference)
    full = target.forward([ForwardItem(None, 0, sequence, 1, want_hidden=True)])[0].hidden
    assert full is not None
    np.testing.assert_allclose(rows, full[: FITS + MAX_NEW], rtol=1e-2, atol=1e-2)  # float16
