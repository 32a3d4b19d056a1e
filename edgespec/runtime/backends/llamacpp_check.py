"""The llama.cpp backend's load-time self-check: batched logits against one-at-a-time
logits, bit for bit (:func:`invariance_problem`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from edgespec.runtime.backends.base import ForwardItem, TargetBackend


def invariance_problem(target: TargetBackend, length: int = 12) -> str | None:
    """How ``target``'s batched logits differ from its one-token-at-a-time logits, or
    ``None`` when they are the same bits. Probe: a ``length``-token sequence S decoded one
    token at a time; then S[:-4] cold (last 2 rows), S[-4:] on top of it beside a cold
    5-token sequence (all rows), and, after cropping S back by 3, S[-3:] again."""
    vocab = target.vocab_size
    seq = tuple((7 * i + 3) % vocab for i in range(length))
    side = tuple((11 * i + 5) % vocab for i in range(5))
    alone = {name: _one_at_a_time(target, tokens) for name, tokens in (("S", seq), ("side", side))}
    head = target.forward([ForwardItem(None, 0, seq[:-4], 2)])[0]
    pair = target.forward(
        [ForwardItem(head.kv, length - 4, seq[-4:], 4), ForwardItem(None, 0, side, 5)]
    )
    kv = target.crop(pair[0].kv, length - 3)
    again = target.forward([ForwardItem(kv, length - 3, seq[-3:], 3)])[0]
    checks = [
        ("a cold block", head.logits, alone["S"][length - 6 : length - 4]),
        ("a follow-up beside a cold start", pair[0].logits, alone["S"][length - 4 :]),
        ("a cold start beside a follow-up", pair[1].logits, alone["side"]),
        ("a re-decode after a crop", again.logits, alone["S"][length - 3 :]),
    ]
    for what, got, want in checks:
        if not np.array_equal(got, want):
            flips = int((got.argmax(-1) != want.argmax(-1)).sum())
            delta = float(np.abs(got - want).max())
            return (
                f"{what}: max |Δlogit| {delta:.3g} against one token at a time, "
                f"{flips} of {len(want)} argmax flips"
            )
    return None


def _one_at_a_time(target: TargetBackend, tokens: Sequence[int]) -> npt.NDArray[np.float32]:
    kv, rows = None, []
    for i, token in enumerate(tokens):
        out = target.forward([ForwardItem(kv, i, (token,), 1)])[0]
        kv = out.kv
        rows.append(out.logits[0])
    return np.stack(rows)
