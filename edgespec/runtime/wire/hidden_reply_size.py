"""The largest reply a ``return_hidden`` session can be sent, checked when it opens.

A session's first reply carries the target's hidden rows of its whole prompt and of the
draft tokens it accepts (:mod:`edgespec.runtime.server.returned_hidden`); every later reply
carries at most 1 + ``max_draft_tokens`` rows, never more than the first (a prompt has a
token at least). A first reply over the server's ``max_message_bytes`` would fail as it is
sent (``RESOURCE_EXHAUSTED: Sent message larger than max``) after its round committed, and
so would every retry of that round, which gets the same reply: :func:`check_hidden_reply`
refuses such a session at ``OpenSession`` instead. The bound, :func:`max_reply_bytes`, is
that of a fused round's chunk (its verdict is the reply, with the round's draft and the
run's history beside it), every field at its largest; a target that does not report its
hidden size (both of edgespec's do) is not checked.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from edgespec.core.wire_limits import UINT32_LIMIT
from edgespec.policies.history_snapshot import (
    MAX_HISTORY_COUNT,
    MAX_HISTORY_S,
    MAX_WINDOW_STATE,
    RECENT_ROUNDS,
    HistorySnapshot,
)
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.wire.codec import hidden_to_bytes, pb
from edgespec.runtime.wire.fused_codec import snapshot_to_proto

_UINT32_MAX = UINT32_LIMIT - 1


@runtime_checkable
class _ReportsHiddenSize(Protocol):
    @property
    def hidden_size(self) -> int: ...


def _varint_bytes(value: int) -> int:
    return max(1, (value.bit_length() + 6) // 7)


def _field_bytes(length: int) -> int:
    """A length-delimited field (tag below 16) of ``length`` bytes, on the wire."""
    return 1 + _varint_bytes(length) + length


def _largest_verdict(max_draft_tokens: int) -> Any:
    """A verify reply without hidden rows, every field at its largest."""
    k, most = max_draft_tokens, _UINT32_MAX
    return pb.VerifyResponse(
        num_drafted=k, num_accepted=k, first_rejection=-1, extra_token=most,
        committed_token_ids=[most] * (k + 1), finished=True, queue_s=1.0, verify_s=1.0,
        batch_size=most, target_hidden_start=most, hidden_size=most,
        accepted_nodes=[most] * k, queue_depth=most, hidden_request=[most] * k,
        accepted_mismatches=most,
    )  # fmt: skip


def _largest_chunk(max_draft_tokens: int) -> Any:
    """A fused round's chunk without its verdict, every field at its largest."""
    count = MAX_HISTORY_COUNT
    history = HistorySnapshot(
        recent=((count, count),) * RECENT_ROUNDS, num_rounds=count, gamma=count,
        last_num_accepted=count, num_committed_total=count, queue_depth=count,
        network_s=MAX_HISTORY_S, fused=True, first_token_age_s=MAX_HISTORY_S,
        window_state=(1.0,) * MAX_WINDOW_STATE,
    )  # fmt: skip
    return pb.FusedRoundChunk(
        gamma=_UINT32_MAX, draft_token_ids=[_UINT32_MAX] * max_draft_tokens, draft_s=1.0,
        run_ended=True, next_gamma=_UINT32_MAX, history=snapshot_to_proto(history),
    )  # fmt: skip


def _row_bytes(hidden_size: int) -> int:
    """The bytes of one hidden row on the wire (the codec's float16)."""
    return len(hidden_to_bytes(np.zeros((1, hidden_size), np.float32))[0])


def max_reply_bytes(num_rows: int, hidden_size: int, max_draft_tokens: int) -> int:
    """The most bytes a reply carrying ``num_rows`` hidden rows of ``hidden_size`` values
    takes: a Verify reply, or the fused round's chunk that holds it (the larger)."""
    verdict = int(_largest_verdict(max_draft_tokens).ByteSize())
    verdict += _field_bytes(num_rows * _row_bytes(hidden_size))
    return int(_largest_chunk(max_draft_tokens).ByteSize()) + _field_bytes(verdict)


def _longest_prompt(num_accepted: int, hidden_size: int, max_draft_tokens: int, limit: int) -> int:
    """The most prompt tokens whose first reply fits ``limit`` bytes (0: none)."""
    least = max_reply_bytes(num_accepted, hidden_size, max_draft_tokens)
    fits = (limit - least) // _row_bytes(hidden_size)
    while fits > 0 and max_reply_bytes(fits + num_accepted, hidden_size, max_draft_tokens) > limit:
        fits -= 1  # the length prefixes grew: a few bytes, a step or two
    return max(fits, 0)


def check_hidden_reply(spec: SessionSpec, target: object, config: ServerConfig) -> None:
    """``INVALID_ARGUMENT`` when ``spec`` asks for hidden states and its first reply could
    exceed the server's ``max_message_bytes`` (the rows of its prompt and of up to
    ``max_draft_tokens`` accepted draft tokens, no more than its ``max_new_tokens``), saying
    the longest prompt that fits; ``target``: the server's target backend."""
    if not spec.return_hidden or not isinstance(target, _ReportsHiddenSize):
        return
    max_message_bytes, max_draft_tokens = config.max_message_bytes, config.max_draft_tokens
    width, num_prompt = target.hidden_size, len(spec.prompt_token_ids)
    num_accepted = min(max_draft_tokens, spec.sampling.max_new_tokens)
    size = max_reply_bytes(num_prompt + num_accepted, width, max_draft_tokens)
    if size <= max_message_bytes:
        return
    fits = _longest_prompt(num_accepted, width, max_draft_tokens, max_message_bytes)
    raise RequestError(
        ErrorCode.INVALID_ARGUMENT,
        f"return_hidden: the session's first reply carries the target's hidden states of its "
        f"{num_prompt} prompt tokens and up to {num_accepted} accepted draft tokens "
        f"({num_prompt + num_accepted} rows of {width} float16 values): up to {size:,} bytes, "
        f"over this server's max_message_bytes of {max_message_bytes:,}; shorten the prompt "
        f"(at most {fits} tokens fit), or raise max_message_bytes on the server and the client "
        "(edgespec draft --max-message-bytes)",
    )
