"""Target-only greedy decoding with the server's row processing written out token by
token, apart from its vectorized code (:mod:`edgespec.runtime.server.logits_processing`):
the penalties (:func:`penalized`, :func:`penalized_greedy`) and the end tokens masked before
``min_tokens`` (:func:`masked_greedy`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from edgespec.runtime.backends.base import ForwardItem, TargetBackend

Penalties = tuple[float, float, float]
"""(repetition, frequency, presence)."""

OFF: Penalties = (1.0, 0.0, 0.0)


def penalized(
    row: npt.NDArray[np.float32], context: Sequence[int], num_prompt: int, penalties: Penalties
) -> npt.NDArray[np.float32]:
    """A copy of ``row`` after ``context`` (``num_prompt`` prompt tokens, then output):
    repetition on every context token, then frequency × count and presence on output's."""
    repetition, frequency, presence = penalties
    out = np.array(row, dtype=np.float32, copy=True)
    for token in set(context):
        value = out[token]
        out[token] = value / np.float32(repetition) if value > 0 else value * np.float32(repetition)
    for token, count in Counter(context[num_prompt:]).items():
        out[token] -= np.float32(frequency * count + presence)
    return out


def penalized_greedy(
    target: TargetBackend,
    prompt: tuple[int, ...],
    penalties: Penalties,
    n: int,
    bias: tuple[tuple[int, float], ...] = (),
) -> tuple[int, ...]:
    """Target-only greedy decoding of the penalized rows (``bias`` (token, bias) pairs added
    first), ``n`` tokens (EOS not checked)."""
    kv, kv_len, seq = None, 0, list(prompt)
    pending: tuple[int, ...] = prompt
    for _ in range(n):
        out = target.forward([ForwardItem(kv, kv_len, pending, 1)])[0]
        kv, kv_len = out.kv, kv_len + len(pending)
        row = np.array(out.rows.host()[-1], dtype=np.float32)
        for token, value in bias:
            row[token] += np.float32(value)
        seq.append(int(np.argmax(penalized(row, seq, len(prompt), penalties))))
        pending = (seq[-1],)
    return tuple(seq[len(prompt) :])


def masked_greedy(
    target: TargetBackend, prompt: tuple[int, ...], ends: frozenset[int], min_tokens: int, n: int
) -> tuple[int, ...]:
    """Target-only greedy decoding, ``ends`` masked in the first ``min_tokens`` rows, ended
    at the first of them (included) or ``n`` tokens."""
    kv, kv_len, out = None, 0, list[int]()
    pending: tuple[int, ...] = prompt
    while len(out) < n:
        step = target.forward([ForwardItem(kv, kv_len, pending, 1)])[0]
        kv, kv_len = step.kv, kv_len + len(pending)
        row = np.array(step.rows.host()[-1], dtype=np.float32)
        if len(out) < min_tokens:
            row[sorted(ends)] = -np.inf
        out.append(int(np.argmax(row)))
        if out[-1] in ends:
            break
        pending = (out[-1],)
    return tuple(out)


def target_logprobs(
    target: TargetBackend, prompt: tuple[int, ...], output: tuple[int, ...], num_top: int
) -> list[tuple[float, list[tuple[int, float]]]]:
    """Each of ``output``'s log-probabilities after ``prompt`` under the target's own rows
    (one uncached forward pass), and the ``num_top`` likeliest tokens' (ties by id)."""
    step = target.forward([ForwardItem(None, 0, (*prompt, *output[:-1]), len(output))])[0]
    found = []
    rows = np.asarray(step.rows.host(), dtype=np.float64)
    ids = np.arange(rows.shape[1])
    for row, token in zip(rows, output, strict=True):
        log_total = np.log(np.exp(row - row.max()).sum()) + row.max()
        order = [int(t) for t in np.lexsort((ids, -row))[:num_top]]  # numpy: 262k ids a row
        found.append(
            (float(row[token] - log_total), [(t, float(row[t] - log_total)) for t in order])
        )
    return found
