"""Cloud-only fused rounds (``edgespec serve --fused-rounds cloud_only``; DSD §4.4 and
DSD-Sim's fused mode): the target decodes alone, one token per round.

A cloud-only round verifies an empty block after the session's committed tokens, so it
commits exactly the target's next token under the session's sampling — the argmax when
greedy, else a draw from the session's own seeded verifier stream, as target-only
decoding draws it (lossless; a lossy semantic rule has no draft token to judge). Nothing
is drafted and nothing crosses a network. With ``--cloud-only-draft-pass`` each round
first runs one pass of the co-located draft and discards its token: DSD-Sim's cost of a
fused round (a co-located draft pass plus a target pass, one token committed).

:func:`play_cloud_only_round` is one round (a fused run's,
:mod:`edgespec.runtime.server.fused_run`); :func:`cloud_only_decode` is the whole-request fused
baseline's loop of them (:mod:`edgespec.runtime.server.fused_baseline`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.base import DraftBackend
from edgespec.runtime.edge.rounds import PlayedRound, Verifier, draft_rng
from edgespec.runtime.messages import SessionSpec, VerifyCall

NEEDS_DRAFT = (
    "--cloud-only-draft-pass runs one co-located draft pass per fused round: it needs "
    "--draft MODEL (or --draft ngram)"
)
"""The refusal of ``--cloud-only-draft-pass`` (``cloud_only_draft_pass``) without a draft."""


def play_cloud_only_round(
    verifier: Verifier,
    drafter: DraftBackend | None,
    session_id: str,
    context: Sequence[int],
    sampling: SamplingParams,
    rng: np.random.Generator,
    clock: Callable[[], float],
) -> PlayedRound:
    """One cloud-only round after ``context`` (the session's committed tokens): ``drafter``'s
    wasted pass first when given (one token drafted from ``rng``, discarded: its time is
    the round's draft time), then the empty block verified. The verifier's reply commits
    the target's next token (none only past the session's end)."""
    start = clock()
    passes = None
    if drafter is not None:  # DSD-Sim's co-located draft pass: its cost only
        drafter.propose(context, 1, sampling.temperature, rng)
        passes = 1
    drafted = clock()
    call = VerifyCall(session_id, len(context), (), draft_s=drafted - start)
    reply = verifier.verify(call)
    return PlayedRound(call, reply, passes, start, drafted, clock())


def cloud_only_decode(
    verifier: Verifier,
    drafter: DraftBackend | None,
    spec: SessionSpec,
    on_tokens: Callable[[tuple[int, ...]], None],
    clock: Callable[[], float],
) -> None:
    """``spec``'s whole request in cloud-only rounds, its session open on ``verifier``;
    ``on_tokens`` gets each round's committed tokens. ``drafter``: the wasted pass's draft
    (``None``: no pass), on the session seed's draft stream."""
    rng = draft_rng(spec.sampling.seed)
    context = list(spec.prompt_token_ids)
    while True:
        played = play_cloud_only_round(
            verifier, drafter, spec.session_id, context, spec.sampling, rng, clock
        )
        outcome = played.reply.outcome
        context.extend(outcome.committed_token_ids)
        on_tokens(outcome.committed_token_ids)
        if outcome.finished:
            return
