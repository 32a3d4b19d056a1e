"""The log-probabilities a session that asks for them gets with each verification
(:func:`committed_logprobs`): for every committed token, its log-probability under the
target's own row at its position (raw logits, before the session's bias, penalties,
temperature or cuts: vLLM's default) and the ``num_top`` likeliest tokens' (ties by token
id). The row of a chain's j-th committed token is row j; a tree's first committed token
is the root row's, then each accepted node's child that of its node."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from edgespec.core.sampling_params import TokenLogprobs
from edgespec.runtime.backends.logit_rows import LogitRows


def committed_rows(num_committed: int, path: Sequence[int] | None) -> list[int]:
    """The logit row each of the first ``num_committed`` committed tokens was chosen from:
    a chain's j-th from row j, a tree's from the root's row then its accepted nodes'
    (``path``: their indices; node i's row is i + 1)."""
    if path is None:
        return list(range(num_committed))
    return [0, *(node + 1 for node in path)][:num_committed]


def row_logprobs(row: npt.NDArray[np.float32], token: int, num_top: int) -> TokenLogprobs:
    """``token``'s log-probability in the softmax of ``row`` and the ``num_top`` likeliest
    tokens' (in float64)."""
    values = np.asarray(row, dtype=np.float64)
    peak = values.max()
    log_total = peak + np.log(np.exp(values - peak).sum())
    top: tuple[tuple[int, float], ...] = ()
    if num_top:
        k = min(num_top, len(values))
        least = np.partition(values, len(values) - k)[len(values) - k]  # the k-th likeliest
        ranked = sorted(np.flatnonzero(values >= least).tolist(), key=lambda t: (-values[t], t))
        top = tuple((int(t), float(values[t] - log_total)) for t in ranked[:k])
    return TokenLogprobs(float(values[token] - log_total), top)


def committed_logprobs(
    rows: LogitRows, committed: Sequence[int], path: Sequence[int] | None, num_top: int
) -> tuple[TokenLogprobs, ...]:
    """Each of ``committed``'s log-probabilities from the verification's raw ``rows``."""
    host = rows.host()
    indices = committed_rows(len(committed), path)
    return tuple(row_logprobs(host[r], t, num_top) for r, t in zip(indices, committed, strict=True))
