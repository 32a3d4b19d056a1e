"""Log-probabilities on the wire, and back: a verification's committed tokens'
(``VerifyResponse``'s ``committed_logprobs``, ``num_top_logprobs``, ``top_logprob_ids``,
``top_logprobs``: :data:`COMMITTED`) and a session's first reply's prompt tokens'
(:data:`PROMPT`, the same four with ``prompt`` in their names). A reply whose counts do not
match is ``INTERNAL``."""

from __future__ import annotations

from typing import Any

from edgespec.core.sampling_params import TokenLogprobs
from edgespec.core.wire_limits import MAX_LOGPROBS
from edgespec.runtime.errors import ErrorCode, RequestError

LogprobFields = tuple[str, str, str, str]
"""The names of one set's four fields: chosen tokens' values, alternatives per token, the
alternatives' ids, their values."""

COMMITTED: LogprobFields = ("committed_logprobs", "num_top_logprobs", "top_logprob_ids",
                            "top_logprobs")  # fmt: skip
PROMPT: LogprobFields = ("prompt_logprobs", "num_top_prompt_logprobs", "top_prompt_logprob_ids",
                         "top_prompt_logprobs")  # fmt: skip


def logprobs_to_proto(
    msg: Any, logprobs: tuple[TokenLogprobs, ...] | None, fields: LogprobFields = COMMITTED
) -> Any:
    """Write ``logprobs`` (each with as many top pairs) into ``msg`` (a ``VerifyResponse``,
    or a ``GenerateChunk``: the same fields); ``msg``."""
    if not logprobs:
        return msg
    chosen, num_top, top_ids, top_values = fields
    getattr(msg, chosen).extend(t.logprob for t in logprobs)
    setattr(msg, num_top, len(logprobs[0].top))
    for t in logprobs:
        getattr(msg, top_ids).extend(token for token, _ in t.top)
        getattr(msg, top_values).extend(lp for _, lp in t.top)
    return msg


def logprobs_from_proto(
    msg: Any, num_tokens: int | None, fields: LogprobFields = COMMITTED
) -> tuple[TokenLogprobs, ...] | None:
    """The log-probabilities of a reply, ``num_tokens`` of them (``None``: any number;
    ``None`` returned when it carries none)."""
    chosen_field, num_top, top_ids, top_values = fields
    chosen, k = list(getattr(msg, chosen_field)), getattr(msg, num_top)
    if not chosen and not k:
        return None
    ids, values = list(getattr(msg, top_ids)), list(getattr(msg, top_values))
    n = len(chosen) if num_tokens is None else num_tokens
    if k > MAX_LOGPROBS or (len(chosen), len(ids), len(values)) != (n, k * n, k * n):
        tokens = "" if num_tokens is None else f" for {n} committed tokens"
        raise RequestError(ErrorCode.INTERNAL, (
            f"malformed {msg.DESCRIPTOR.name}: {len(chosen)} {chosen_field} and {len(ids)} top "
            f"pairs ({k} each){tokens}"))  # fmt: skip
    pairs = list(zip(ids, values, strict=True))
    return tuple(
        TokenLogprobs(lp, tuple(pairs[i * k : (i + 1) * k])) for i, lp in enumerate(chosen)
    )
