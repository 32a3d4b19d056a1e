"""From one verification's target logits to its verdict and the tokens it commits."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
import numpy.typing as npt

from edgespec.core.speculative import greedy_verify, greedy_verify_tree, stochastic_verify
from edgespec.core.types import SamplingParams, VerifyResult
from edgespec.runtime.messages import VerifyCall
from edgespec.runtime.sampling import logits_to_probs


def verdict(
    call: VerifyCall,
    sampling: SamplingParams,
    logits: npt.NDArray[np.float32],
    rng: np.random.Generator,
) -> tuple[VerifyResult, tuple[int, ...] | None]:
    """The verification result and, for a token tree, its accepted path."""
    draft = call.draft_token_ids
    if call.draft_parents is not None:
        argmax = [int(t) for t in np.argmax(logits, axis=-1)]
        return greedy_verify_tree(draft, call.draft_parents, argmax)
    if sampling.greedy:
        return greedy_verify(draft, [int(t) for t in np.argmax(logits, axis=-1)]), None
    probs = logits_to_probs(logits, sampling.temperature, sampling.top_p)
    q = np.zeros((0, probs.shape[1])) if call.draft_probs is None else call.draft_probs
    return stochastic_verify(draft, q, probs, rng), None


def cut_committed(tokens: Sequence[int], budget: int, eos: Collection[int]) -> list[int]:
    """``tokens`` cut to the token budget and after the first EOS."""
    committed = list(tokens[:budget])
    for i, tok in enumerate(committed):
        if tok in eos:
            return committed[: i + 1]
    return committed
