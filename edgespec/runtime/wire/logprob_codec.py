"""A verification's committed-token log-probabilities on the wire (``VerifyResponse``'s
``committed_logprobs``, ``num_top_logprobs``, ``top_logprob_ids``, ``top_logprobs``), and
back: a reply whose counts do not match its committed tokens is ``INTERNAL``."""

from __future__ import annotations

from typing import Any

from edgespec.core.sampling_params import TokenLogprobs
from edgespec.core.wire_limits import MAX_LOGPROBS
from edgespec.runtime.errors import ErrorCode, RequestError


def logprobs_to_proto(msg: Any, logprobs: tuple[TokenLogprobs, ...] | None) -> None:
    """Write ``logprobs`` (each with as many top pairs) into the ``VerifyResponse`` ``msg``."""
    if not logprobs:
        return
    msg.committed_logprobs.extend(t.logprob for t in logprobs)
    msg.num_top_logprobs = len(logprobs[0].top)
    for t in logprobs:
        msg.top_logprob_ids.extend(token for token, _ in t.top)
        msg.top_logprobs.extend(lp for _, lp in t.top)


def logprobs_from_proto(msg: Any, num_committed: int) -> tuple[TokenLogprobs, ...] | None:
    """The log-probabilities of a reply that committed ``num_committed`` tokens (``None``
    when it carries none)."""
    chosen, k = list(msg.committed_logprobs), msg.num_top_logprobs
    if not chosen and not k:
        return None
    ids, values = list(msg.top_logprob_ids), list(msg.top_logprobs)
    counts = (len(chosen), len(ids), len(values))
    if k > MAX_LOGPROBS or counts != (num_committed, k * num_committed, k * num_committed):
        raise RequestError(ErrorCode.INTERNAL, (
            f"malformed VerifyResponse: {len(chosen)} committed_logprobs and {len(ids)} top "
            f"pairs ({k} each) for {num_committed} committed tokens"))  # fmt: skip
    pairs = list(zip(ids, values, strict=True))
    return tuple(
        TokenLogprobs(lp, tuple(pairs[i * k : (i + 1) * k])) for i, lp in enumerate(chosen)
    )
