"""The largest first reply a session can be sent, checked when it opens.

A session's first reply is its largest: it carries the target's hidden rows of its whole
prompt and of the draft tokens it accepts when it asks for ``return_hidden``
(:mod:`edgespec.runtime.server.returned_hidden`), and the log-probabilities of every
prompt token after the first when it asks for ``prompt_logprobs``
(:mod:`edgespec.runtime.server.prompt_logprobs`); every later reply carries at most
1 + ``max_draft_tokens`` rows and committed tokens. A first reply over the server's
``max_message_bytes`` would fail as it is sent (``RESOURCE_EXHAUSTED: Sent message larger
than max``) after its round committed, and so would every retry of that round, which gets
the same reply: :func:`check_first_reply` refuses such a session at ``OpenSession`` (and a
centralized ``Generate``, whose first chunk carries the same) instead. The bound,
:func:`max_reply_bytes`, is that of a fused round's chunk (its verdict is the reply, with
the round's draft and the run's history beside it), every field at its largest; hidden
rows are counted only for a target that reports its hidden size (both of edgespec's do).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
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


@functools.cache
def _row_bytes(hidden_size: int) -> int:
    """The bytes of one hidden row on the wire (the codec's float16)."""
    return len(hidden_to_bytes(np.zeros((1, hidden_size), np.float32))[0])


def _packed_bytes(length: int) -> int:
    """A packed repeated field of ``length`` bytes whose number is at most 2,047 (a tag
    of two bytes at most), on the wire."""
    return 2 + _varint_bytes(length) + length if length else 0


def logprob_bytes(num_tokens: int, num_top: int, vocab_size: int) -> int:
    """The most bytes one set of log-probability fields (:mod:`.logprob_codec`) takes for
    ``num_tokens`` tokens with ``num_top`` alternatives each from ``vocab_size`` ids."""
    if not num_tokens:
        return 0
    num_pairs = num_tokens * num_top
    return (
        _packed_bytes(8 * num_tokens)  # the chosen tokens' doubles
        + 2 + _varint_bytes(num_top)  # alternatives per token
        + _packed_bytes(num_pairs * _varint_bytes(vocab_size - 1))  # the alternatives' ids
        + _packed_bytes(8 * num_pairs)  # their doubles
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class FirstReply:
    """What a session's first reply carries beside its verdict's fixed fields."""

    num_prompt_tokens: int
    num_accepted: int  # draft tokens it may accept (at most max_draft_tokens, max_new_tokens)
    hidden_size: int  # 0: no hidden rows
    committed_top: int | None  # Sampling.logprobs: the committed tokens' alternatives
    prompt_top: int | None  # Sampling.prompt_logprobs: the prompt tokens' alternatives
    vocab_size: int

    def num_bytes(self, num_prompt_tokens: int, max_draft_tokens: int) -> int:
        """The most bytes the reply takes with a prompt of ``num_prompt_tokens``."""
        rows = num_prompt_tokens + self.num_accepted if self.hidden_size else 0
        extra = 0
        if self.committed_top is not None:
            extra += logprob_bytes(self.num_accepted + 1, self.committed_top, self.vocab_size)
        if self.prompt_top is not None:
            extra += logprob_bytes(num_prompt_tokens - 1, self.prompt_top, self.vocab_size)
        return max_reply_bytes(rows, self.hidden_size, max_draft_tokens, extra)

    def contents(self) -> str:
        """What it carries, in words."""
        n, parts = self.num_prompt_tokens, []
        if self.hidden_size:
            rows = n + self.num_accepted
            parts.append(
                f"the target's hidden states of its {n} prompt tokens and up to "
                f"{self.num_accepted} accepted draft tokens ({rows} rows of "
                f"{self.hidden_size} float16 values)"
            )
        if self.prompt_top is not None:
            parts.append(
                f"the log-probabilities of its {n - 1} prompt tokens after the first, with "
                f"{self.prompt_top} alternatives each"
            )
        if self.committed_top is not None:
            those = "those" if self.prompt_top is not None else "the log-probabilities"
            parts.append(
                f"{those} of up to {self.num_accepted + 1} committed tokens, with "
                f"{self.committed_top} alternatives each"
            )
        return " and ".join(parts)


def max_reply_bytes(
    num_rows: int, hidden_size: int, max_draft_tokens: int, extra_bytes: int = 0
) -> int:
    """The most bytes a reply carrying ``num_rows`` hidden rows of ``hidden_size`` values
    and ``extra_bytes`` of other fields (log-probabilities) takes: a Verify reply, or the
    fused round's chunk that holds it (the larger)."""
    verdict_bytes, chunk_bytes = _fixed_bytes(max_draft_tokens)
    verdict = verdict_bytes + extra_bytes
    if num_rows:
        verdict += _field_bytes(num_rows * _row_bytes(hidden_size))
    return chunk_bytes + _field_bytes(verdict)


@functools.cache
def _fixed_bytes(max_draft_tokens: int) -> tuple[int, int]:
    """The largest verdict's and fused chunk's bytes without hidden rows or log-probabilities
    (a server's one ``max_draft_tokens``: built once)."""
    verdict, chunk = _largest_verdict(max_draft_tokens), _largest_chunk(max_draft_tokens)
    return int(verdict.ByteSize()), int(chunk.ByteSize())


def _longest_prompt(reply: FirstReply, max_draft_tokens: int, limit: int) -> int:
    """The most prompt tokens, fewer than the reply's own, whose first reply fits ``limit``
    bytes (0: none, or its size does not depend on the prompt's)."""

    def size(num_tokens: int) -> int:
        return reply.num_bytes(num_tokens, max_draft_tokens)

    per_token = size(3) - size(2)  # from 2 tokens on: each set of fields is there
    if size(1) > limit or not per_token:
        return 0
    fits = max(1, min(2 + (limit - size(2)) // per_token, reply.num_prompt_tokens - 1))
    while fits < reply.num_prompt_tokens - 1 and size(fits + 1) <= limit:
        fits += 1  # the estimate is a few bytes off: the length prefixes grow
    while fits > 1 and size(fits) > limit:
        fits -= 1
    return fits


def first_reply(spec: SessionSpec, target: object, vocab_size: int, max_draft_tokens: int
                ) -> FirstReply:  # fmt: skip
    """What ``spec``'s first reply carries on a server of ``target`` (its backend)."""
    hidden = target.hidden_size if isinstance(target, _ReportsHiddenSize) else 0
    return FirstReply(
        num_prompt_tokens=len(spec.prompt_token_ids),
        num_accepted=min(max_draft_tokens, spec.sampling.max_new_tokens),
        hidden_size=hidden if spec.return_hidden else 0,
        committed_top=spec.sampling.logprobs,
        prompt_top=spec.sampling.prompt_logprobs,
        vocab_size=vocab_size,
    )


def check_first_reply(
    spec: SessionSpec, target: object, vocab_size: int, config: ServerConfig
) -> None:
    """``INVALID_ARGUMENT`` when ``spec``'s first reply could exceed the server's
    ``max_message_bytes`` (see the module's docstring), saying the longest prompt that
    fits; ``target``: the server's target backend, of ``vocab_size`` tokens."""
    max_message_bytes, max_draft_tokens = config.max_message_bytes, config.max_draft_tokens
    reply = first_reply(spec, target, vocab_size, max_draft_tokens)
    if not reply.hidden_size and reply.committed_top is None and reply.prompt_top is None:
        return  # a plain reply: its size is the server's own settings', not the session's
    size = reply.num_bytes(reply.num_prompt_tokens, max_draft_tokens)
    if size <= max_message_bytes:
        return
    fits = _longest_prompt(reply, max_draft_tokens, max_message_bytes)
    asked = [name for name, on in (("return_hidden", reply.hidden_size),
             ("prompt_logprobs", reply.prompt_top is not None),
             ("logprobs", reply.committed_top is not None)) if on]  # fmt: skip
    if fits:
        shorten = f"shorten the prompt (at most {fits} tokens fit), or "
    else:
        fewer = "ask for fewer alternatives, or " if asked[-1].endswith("logprobs") else ""
        shorten = f"no prompt fits: {fewer}"
    raise RequestError(
        ErrorCode.INVALID_ARGUMENT,
        f"{', '.join(asked)}: the session's first reply carries {reply.contents()}: up to "
        f"{size:,} bytes, over this server's max_message_bytes of {max_message_bytes:,}; "
        f"{shorten}raise max_message_bytes on the server and the client "
        "(edgespec draft --max-message-bytes)",
    )
