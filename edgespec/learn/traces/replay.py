"""What a trace's rounds and acceptance sequence say: the accepted lengths a window replays
from the sequence (:func:`replay_accepted_lengths`), the share of sent draft tokens accepted
and the draft passes wasted per round."""

from __future__ import annotations

from collections.abc import Sequence

from edgespec.learn.traces.records import TraceRound


def sent_acceptance(rounds: Sequence[TraceRound]) -> float | None:
    """Accepted / sent draft tokens over ``rounds`` (``None`` when none was sent)."""
    sent = sum(r.gamma for r in rounds)
    return sum(r.num_accepted for r in rounds) / sent if sent else None


def wasted_passes_per_round(rounds: Sequence[TraceRound]) -> float | None:
    """Mean draft passes per round that gave no accepted token, Σ (passes − accepted)⁺ /
    rounds (WISP Eq. 7's W = (K − L)⁺ counted in draft passes, so a stop predictor's
    stopped-on token counts); ``None`` for no rounds."""
    if not rounds:
        return None
    return sum(max(r.passes - r.num_accepted, 0) for r in rounds) / len(rounds)


def replay_accepted_lengths(
    acceptance_seq: Sequence[int], gamma: int, max_new_tokens: int | None = None
) -> list[int]:
    """Accepted lengths of the greedy rounds a window of ``gamma`` would run over the sequence.

    A round at position s accepts L = the run of 1s from s, capped at its window and at the
    end of the output, and commits L + 1 tokens; the next round starts at s + L + 1. The
    window is γ, or with ``max_new_tokens`` the runtime drafter's
    min(γ, max_new_tokens − s − 1) (:func:`edgespec.runtime.edge.rounds.capped_gamma`, as the
    simulator caps it): it never drafts past the token budget, and the last token is a
    target step with nothing drafted.
    """
    if gamma < 1:
        raise ValueError(f"gamma must be >= 1, got {gamma}")
    lengths, pos, n = [], 0, len(acceptance_seq)
    while pos < n:
        window = gamma
        if max_new_tokens is not None:
            window = min(gamma, max_new_tokens - pos - 1)
        length = 0
        while length < window and pos + length < n and acceptance_seq[pos + length]:
            length += 1
        lengths.append(length)
        pos += length + 1
    return lengths
