"""A session's first reply carries its prompt's log-probabilities (``prompt_logprobs``):
~228 bytes a prompt token at 20 alternatives on Gemma 3's vocabulary, so a long prompt's
outgrew ``max_message_bytes``: its round committed, the reply failed as it was sent, and
every retry got the same reply. Such a session is refused when it opens (or a centralized
``Generate`` starts), saying the longest prompt that fits; that prompt's first reply
arrives. :func:`logprob_bytes` is the fields' size on the wire."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from edgespec.config import from_dict
from edgespec.core.sampling_params import TokenLogprobs
from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.errors import RequestError
from edgespec.runtime.messages import SessionSpec
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.wire.codec import pb, spec_to_proto
from edgespec.runtime.wire.grpc_common import pb_grpc
from edgespec.runtime.wire.inprocess import target_greedy_decode
from edgespec.runtime.wire.logprob_codec import COMMITTED, PROMPT, logprobs_to_proto
from edgespec.runtime.wire.reply_size import check_first_reply, logprob_bytes
from tests.runtime.conftest import ServerFactory

LIMIT = 4096  # bytes
MAX_DRAFT = 8
MAX_NEW = 8
FITS = 18  # prompt tokens whose 17 prompt log-probabilities (20 alternatives) fit LIMIT
TAIL = (
    ", or raise max_message_bytes on the server and the client (edgespec draft --max-message-bytes)"
)


def _spec(sid: str, length: int, **sampling: Any) -> SessionSpec:
    prompt = tuple((5 * j + 1) % 64 for j in range(length))
    return SessionSpec(sid, "c", prompt, SamplingParams(max_new_tokens=MAX_NEW, **sampling))


def _refusal(call: Any) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value.code(), str(info.value.details())


@pytest.fixture
def stub(make_server: ServerFactory) -> Iterator[Any]:
    server = make_server(max_message_bytes=LIMIT, max_draft_tokens=MAX_DRAFT)
    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        yield pb_grpc.VerificationStub(channel)


@pytest.mark.parametrize(("num_tokens", "num_top", "vocab_size"),
                         [(1, 1, 64), (5, 20, 64), (300, 20, 262_144), (17, 3, 128)])  # fmt: skip
def test_logprob_bytes_are_the_fields_bytes_on_the_wire(
    num_tokens: int, num_top: int, vocab_size: int
) -> None:
    top = tuple((vocab_size - 1, -2.5) for _ in range(num_top))  # the largest id
    logprobs = tuple(TokenLogprobs(-1.5, top) for _ in range(num_tokens))
    for fields in (COMMITTED, PROMPT):
        reply = logprobs_to_proto(pb.VerifyResponse(), logprobs, fields)
        assert reply.ByteSize() == logprob_bytes(num_tokens, num_top, vocab_size)


def test_a_prompt_whose_log_probabilities_cannot_be_sent_is_refused_at_open(stub: Any) -> None:
    spec = _spec("big", FITS + 1, prompt_logprobs=20)
    code, details = _refusal(lambda: stub.OpenSession(spec_to_proto(spec), timeout=10))
    assert code is grpc.StatusCode.INVALID_ARGUMENT
    assert details == (
        "prompt_logprobs: the session's first reply carries the log-probabilities of its 18 "
        "prompt tokens after the first, with 20 alternatives each: up to 4,282 bytes, over "
        "this server's max_message_bytes of 4,096; shorten the prompt (at most 18 tokens fit)"
        + TAIL
    )
    stats = stub.Stats(pb.StatsRequest(), timeout=10)
    assert (stats.num_sessions, stats.num_rejected) == (0, 1)


def test_the_longest_prompt_that_fits_opens_and_its_first_reply_arrives(
    stub: Any, target: TransformersTarget
) -> None:
    spec = _spec("fits", FITS, prompt_logprobs=20)
    stub.OpenSession(spec_to_proto(spec), timeout=10)
    reference = target_greedy_decode(target, spec.prompt_token_ids, MAX_NEW)
    request = pb.VerifyRequest(session_id="fits", prefix_len=FITS, draft_token_ids=reference)
    reply = stub.Verify(request, timeout=10)
    assert tuple(reply.committed_token_ids) == reference
    assert len(reply.prompt_logprobs) == FITS - 1 and reply.num_top_prompt_logprobs == 20
    assert reply.ByteSize() <= LIMIT


def test_a_centralized_generate_is_refused_alike(stub: Any) -> None:
    session = spec_to_proto(_spec("g", FITS + 1, prompt_logprobs=20))
    request = pb.GenerateRequest(session=session, mode=pb.MODE_CENTRALIZED)
    code, details = _refusal(lambda: list(stub.Generate(request, timeout=10)))
    assert code is grpc.StatusCode.INVALID_ARGUMENT
    assert details.startswith("prompt_logprobs: the session's first reply carries the log-")
    assert stub.Stats(pb.StatsRequest(), timeout=10).num_sessions == 0
    session = spec_to_proto(_spec("g", FITS, prompt_logprobs=20))
    chunks = list(stub.Generate(pb.GenerateRequest(session=session, mode=pb.MODE_CENTRALIZED)))
    assert len(chunks[0].prompt_logprobs) == FITS - 1


def test_hidden_states_and_log_probabilities_are_counted_together(stub: Any) -> None:
    """Each fits alone at this prompt's length; both do not."""
    for fields in ({"prompt_logprobs": 20}, {"logprobs": 20}):
        stub.OpenSession(spec_to_proto(_spec(str(fields), 5, **fields)), timeout=10)
    stub.OpenSession(spec_to_proto(SessionSpec("h", "c", (1,) * 5, SamplingParams(
        max_new_tokens=MAX_NEW), return_hidden=True)), timeout=10)  # fmt: skip
    both = SessionSpec("both", "c", (1,) * 5, SamplingParams(
        max_new_tokens=MAX_NEW, logprobs=20, prompt_logprobs=20), return_hidden=True)  # fmt: skip
    code, details = _refusal(lambda: stub.OpenSession(spec_to_proto(both), timeout=10))
    assert code is grpc.StatusCode.INVALID_ARGUMENT
    assert details.startswith(
        "return_hidden, prompt_logprobs, logprobs: the session's first reply carries the "
        "target's hidden states of its 5 prompt tokens and up to 8 accepted draft tokens (13 "
        "rows of 32 float16 values) and the log-probabilities of its 4 prompt tokens after "
        "the first, with 20 alternatives each and those of up to 9 committed tokens, with 20 "
        "alternatives each: up to "
    )
    assert details.endswith("shorten the prompt (at most 4 tokens fit)" + TAIL)


def test_a_reply_no_prompt_length_fits_says_so(make_server: ServerFactory) -> None:
    server = make_server(max_message_bytes=2048, max_draft_tokens=MAX_DRAFT)
    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        stub = pb_grpc.VerificationStub(channel)
        spec = spec_to_proto(_spec("s", 3, logprobs=20))
        code, details = _refusal(lambda: stub.OpenSession(spec, timeout=10))
    assert code is grpc.StatusCode.INVALID_ARGUMENT
    assert details == (
        "logprobs: the session's first reply carries the log-probabilities of up to 9 "
        "committed tokens, with 20 alternatives each: up to 2,589 bytes, over this server's "
        "max_message_bytes of 2,048; no prompt fits: ask for fewer alternatives" + TAIL
    )


def test_a_plain_session_is_not_checked() -> None:
    """Without hidden rows or log-probabilities the reply's size is the server's settings':
    a session is not refused for them (nothing was asked to name)."""
    config = from_dict(ServerConfig, {"max_message_bytes": 64})
    check_first_reply(_spec("plain", 4000), object(), 262_144, config)
    with pytest.raises(RequestError, match=r"^INVALID_ARGUMENT: logprobs: "):
        check_first_reply(_spec("asked", 4, logprobs=1), object(), 262_144, config)
