"""Which items of a verification batch share one padded forward pass.

:class:`~edgespec.runtime.backends.transformers_backend.TransformersTarget` runs a pass as
one padded tensor: B rows of ``max(L_new)`` new tokens, each attending over
``max(L_cached + L_new)`` key positions. A batch that mixes a long cold start with short
follow-ups therefore computes the follow-ups at the cold start's length and the cold start
over the follow-ups' padded prefixes: on Gemma 3 270M (2 CPU threads) a 971-token cold
start and a 5-token follow-up on 1,000 cached tokens took 4,534 ms in one pass against
2,066 ms in two (2.2×; docs/PERFORMANCE.md, *Backend A/B measurements*).
Splitting such a batch into passes of similar shape keeps the padding small; verification
blocks of similar length (1 to γ + 1 tokens) stay one pass. A long prompt's cold start is
itself cut into passes of :data:`PREFILL_CHUNK_TOKENS`.
"""

from __future__ import annotations

from collections.abc import Sequence

Shape = tuple[int, int]
"""(new tokens, cached tokens) of one item."""

MAX_WASTE = 1.5
"""A pass may compute at most this multiple of its items' own work (plus the slack)."""
SLACK_TOKENS = 16
"""Padding each row to up to this many new tokens is always accepted: verification blocks
(1 to γ + 1 tokens) batch together whatever their prefixes, which beats a pass each."""

PREFILL_CHUNK_TOKENS = 512
"""New tokens per pass of a long prompt's cold start (the tokens that need no logits, ahead
of the rest): its attention then works on ``chunk × (cached + chunk)`` scores, not
``prompt²``, with the same bits (the exact mode's reduction ignores masked chunks). On a
CPU, Gemma 3 270M's 2,040-token cold start took 0.69× the time of one pass exact, 0.94×
lossy (``benchmarks/results/cold-start-cpu-gemma3-270m.json``)."""


def padding_ok(shapes: Sequence[Shape]) -> bool:
    """Whether one padded pass over ``shapes`` wastes little: both its new-token rows
    B·max(L_new) and its attention products B·max(L_new)·max(L_total) stay within
    :data:`MAX_WASTE` × the items' own (Σ L_new, Σ L_new·L_total), plus the slack of
    :data:`SLACK_TOKENS` new tokens per row."""
    size = len(shapes)
    max_new = max(new for new, _ in shapes)
    max_total = max(new + cached for new, cached in shapes)
    own_new = sum(new for new, _ in shapes)
    own_attention = sum(new * (new + cached) for new, cached in shapes)
    return (
        size * max_new <= MAX_WASTE * own_new + SLACK_TOKENS * size
        and size * max_new * max_total
        <= MAX_WASTE * own_attention + SLACK_TOKENS * size * max_total
    )


def pass_groups(shapes: Sequence[Shape]) -> list[list[int]]:
    """Item indices grouped into forward passes: items sorted by (L_new, L_cached), a new
    pass started whenever adding the next item would fail :func:`padding_ok`."""
    order = sorted(range(len(shapes)), key=lambda i: shapes[i])
    groups: list[list[int]] = []
    for index in order:
        if groups and padding_ok([shapes[i] for i in groups[-1]] + [shapes[index]]):
            groups[-1].append(index)
        else:
            groups.append([index])
    return groups
