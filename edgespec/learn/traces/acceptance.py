"""Acceptance per output position: the drafter asked for one token at every position of the
target's output on the target's prefix (``acceptance_seq`` and, for neural drafts, the
draft-logit features), the continuations a rejection leaves, and the target's hidden rows
feature drafts need; :func:`flags_from_rounds` for drafters whose steps are rounds. A
sampled capture (``edgespec trace --temperature``): :func:`acceptance_probabilities` (α and
the draft row's kept entries per position) and :func:`sampled_flags` (the outcomes its
rounds drew)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from edgespec.core.features import stop_features
from edgespec.core.speculative import acceptance_probability
from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.base import (
    DraftBackend,
    FeatureDraftBackend,
    ForwardItem,
    TargetBackend,
)
from edgespec.runtime.backends.draft_shaping import draft_shaping
from edgespec.runtime.sampling import logits_to_probs


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


@dataclass(frozen=True, slots=True)
class SampledPositions:
    """A sampled capture's per output position: α, the probability that stochastic
    verification accepts the draft's token there, and ``row_entries``, the nonzero entries
    of the draft's row q (a compact uplink row's size)."""

    alphas: tuple[float, ...]
    row_entries: tuple[int, ...]


def acceptance_probabilities(
    drafter: DraftBackend,
    target: TargetBackend,
    prompt_ids: Sequence[int],
    output_ids: Sequence[int],
    sampling: SamplingParams,
    target_hidden: npt.NDArray[np.float32] | None = None,
) -> SampledPositions:
    """α at every output position j, the probability that stochastic verification with
    ``sampling`` (its temperature and cuts) accepts the draft's token there, Σ min(p_j, q_j)
    (:func:`~edgespec.core.speculative.acceptance_probability`), with p_j the target's
    distribution after prompt + output[:j] (its rows in passes: :func:`_target_rows`) and
    q_j the draft's, asked for one token on that prefix as the drafter loop asks, its rows
    cut as the target's (:func:`~edgespec.runtime.backends.draft_shaping.draft_shaping`; a
    drafter without a distribution, prompt lookup, proposes one token for certain); q_j's
    nonzero entries are what a compact ``VerifyRequest`` row carries for it."""
    rng = np.random.default_rng(0)
    drafter.reset()
    if target_hidden is not None and isinstance(drafter, FeatureDraftBackend):
        drafter.observe_target_hidden(0, target_hidden)
    alphas: list[float] = []
    entries: list[int] = []
    temperature, cut = sampling.temperature, (sampling.top_p, sampling.top_k, sampling.min_p)
    shaping = draft_shaping(sampling, len(prompt_ids))
    for j, row in enumerate(_target_rows(target, prompt_ids, output_ids)):
        context = (*prompt_ids, *output_ids[:j])
        proposal = drafter.propose(context, 1, temperature, rng, shaping)
        target_probs = logits_to_probs(row, temperature, *cut)
        if proposal.probs is None:
            draft_probs = np.zeros_like(target_probs)
            draft_probs[proposal.token_ids[0]] = 1.0
        else:
            draft_probs = np.asarray(proposal.probs[0], dtype=np.float64)
        alphas.append(acceptance_probability(target_probs, draft_probs))
        entries.append(int(np.count_nonzero(draft_probs)))
    drafter.reset()
    return SampledPositions(tuple(alphas), tuple(entries))


ROWS_PER_PASS = 64
"""The target rows :func:`acceptance_probabilities` holds at once (64 × 262,144 float32:
64 MiB), a pass on the KV cache of the passes before it each."""


def _target_rows(
    target: TargetBackend, prompt_ids: Sequence[int], output_ids: Sequence[int]
) -> Iterator[npt.NDArray[np.float32]]:
    """The target's logit row after prompt + output[:j], for every j, in passes of at most
    :data:`ROWS_PER_PASS` rows: a pass forwards the tokens before its rows' positions."""
    kv, kv_len = None, 0
    for start in range(0, len(output_ids), ROWS_PER_PASS):
        end = min(start + ROWS_PER_PASS, len(output_ids))
        if start == 0:  # rows 0 .. end - 1 follow the prompt and output[: end - 1]
            new = (*prompt_ids, *output_ids[: end - 1])
        else:  # the pass before forwarded up to output[start - 2]
            new = tuple(output_ids[start - 1 : end - 1])
        out = target.forward([ForwardItem(kv, kv_len, new, end - start)])[0]
        kv, kv_len = out.kv, kv_len + len(new)
        yield from out.logits


def sampled_flags(
    rounds: Sequence[tuple[int, int]], alphas: Sequence[float], rng: np.random.Generator
) -> tuple[int, ...]:
    """Per-position flags of a sampled capture, one per entry of ``alphas``: what each
    position a round tested drew (a round that sent K tokens and accepted L < K: L ones,
    then the zero of its rejection), and for each position no round tested (the bonus token
    after a round that accepted all it sent, a last token drafted by none) a draw from its
    α with ``rng``. At the captured window the flags replay the rounds exactly (a round's
    window ends before its untested position); at another window a position is accepted
    as often as stochastic verification accepts it there."""
    num_positions = len(alphas)
    flags: list[int] = []

    def draw() -> None:
        flags.append(int(rng.random() < alphas[len(flags)]))

    for num_sent, num_accepted in rounds:
        flags.extend([1] * num_accepted)
        if len(flags) >= num_positions:
            break
        if num_accepted < num_sent:
            flags.append(0)
        else:
            draw()
    while len(flags) < num_positions:
        draw()
    return tuple(flags[:num_positions])
