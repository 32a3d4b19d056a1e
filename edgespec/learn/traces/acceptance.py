"""Acceptance per output position: the drafter asked for one token at every position of the
target's output on the target's prefix (``acceptance_seq`` and, for neural drafts, the
draft-logit features), the continuations a rejection leaves, and the target's hidden rows
feature drafts need; :func:`flags_from_rounds` for drafters whose steps are rounds."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from edgespec.core.features import stop_features
from edgespec.runtime.backends.base import (
    DraftBackend,
    FeatureDraftBackend,
    ForwardItem,
    TargetBackend,
)


def per_position_acceptance(
    drafter: DraftBackend,
    prompt_ids: Sequence[int],
    output_ids: Sequence[int],
    target_hidden: npt.NDArray[np.float32] | None = None,
) -> tuple[tuple[int, ...], tuple[tuple[float, ...], ...] | None]:
    """(acceptance flag per output position, feature rows or ``None``) — see trace.py.
    A feature draft is given ``target_hidden`` (the target's features of the sequence)."""
    rng = np.random.default_rng(0)
    drafter.reset()
    if target_hidden is not None and isinstance(drafter, FeatureDraftBackend):
        drafter.observe_target_hidden(0, target_hidden)
    flags: list[int] = []
    logit_rows = []
    context = list(prompt_ids)
    for token in output_ids:
        proposal = drafter.propose(context, 1, 0.0, rng)
        flags.append(int(proposal.token_ids[0] == token))
        last = getattr(drafter, "last_logits", None)
        if last is not None:
            logit_rows.append(np.asarray(last[0], dtype=np.float64))
        context.append(int(token))
    drafter.reset()
    if len(logit_rows) != len(flags) or not flags:
        return tuple(flags), None
    feats = stop_features(np.stack(logit_rows))
    return tuple(flags), tuple(tuple(float(v) for v in row) for row in feats)


def rejection_continuations(
    drafter: DraftBackend,
    prompt_ids: Sequence[int],
    output_ids: Sequence[int],
    flags: Sequence[int],
    k_max: int,
) -> tuple[tuple[int, tuple[tuple[float, ...], ...]], ...] | None:
    """At every rejected position p: the features of the draft's next ``k_max`` − 1
    positions when it drafts on from its own (rejected) token at p, as in a live round
    (trace.py ``rejection_features``). ``None`` for drafters without logits."""
    if k_max < 2:
        return ()
    rng = np.random.default_rng(0)
    drafter.reset()
    found = []
    for p, flag in enumerate(flags):
        if flag or p >= len(output_ids) - 1:
            continue
        drafter.propose((*prompt_ids, *output_ids[:p]), k_max, 0.0, rng)
        last = getattr(drafter, "last_logits", None)
        if last is None or len(last) != k_max:
            drafter.reset()
            return None
        rows = stop_features(np.asarray(last, dtype=np.float64))[1:]
        found.append((p, tuple(tuple(float(v) for v in row) for row in rows)))
    drafter.reset()
    return tuple(found)


def wants_hidden(drafter: DraftBackend) -> bool:
    return isinstance(drafter, FeatureDraftBackend) and bool(drafter.wants_target_hidden)


def target_hidden_rows(target: TargetBackend, token_ids: Sequence[int]) -> npt.NDArray[np.float32]:
    """The target's last-layer features at every position of ``token_ids`` (one pass)."""
    out = target.forward([ForwardItem(None, 0, tuple(token_ids), 1, want_hidden=True)])[0]
    if out.hidden is None:
        raise ValueError("the target backend returned no hidden states")
    return out.hidden


def flags_from_rounds(accepted: Sequence[int], num_output: int) -> tuple[int, ...]:
    """Per-position flags that replay to exactly these rounds at their window: a round
    that accepted L tokens marks L ones and then a zero (its correction/bonus token)."""
    flags: list[int] = []
    for length in accepted:
        flags.extend([1] * length + [0])
    return tuple(flags[:num_output]) + (0,) * max(0, num_output - len(flags))
