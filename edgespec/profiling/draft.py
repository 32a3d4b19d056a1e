"""Drafter latency and FLOPs for ``edgespec profile`` (Zhu et al. seed 001, §II-D).

:func:`measure_drafter` times :meth:`DraftBackend.propose` calls, the drafter's real code
path: a cold call (empty cache: one pass over the context, then γ − 1 one-token passes)
and a follow-up call (context grown by one fresh token: one pass over it on the cached
prefix, then γ − 1 passes), at several context lengths, with fresh random contexts. Each
call's passes are summed into one WISP-shaped row (Σ new tokens, Σ interactions,
Σ cached, number of passes), so Eq. 19 summed over passes can be fitted by OLS, and Eq.
17 as Σ_passes (c₁·F + c₂) = c₁·ΣF + c₂·passes. Per-token latency is the follow-up
calls' mean time / γ. The batched calls the drafting server makes are timed by
:mod:`edgespec.profiling.draft_batch`, in the same rows.

:func:`model_spec` maps a Hugging Face config to the simulator's
:class:`~edgespec.hardware.cost_models.ModelArchitecture`, whose :meth:`flops` is the one
FLOPs formula.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from time import perf_counter
from typing import Any

import numpy as np

from edgespec.hardware.cost_models import ModelArchitecture
from edgespec.policies.estimator import BatchShape
from edgespec.profiling.measure import PromptSource
from edgespec.runtime.backends.base import DraftBackend


def model_spec(model: Any, name: str) -> ModelArchitecture:
    """The architecture of a loaded HF causal LM (a trimmed-vocabulary draft counts its
    kept ids, ``num_kept``, as its head width, and its head is tied to their embedding rows)."""
    c = model.config
    heads = int(c.num_attention_heads)
    head_dim = getattr(c, "head_dim", None) or c.hidden_size // heads
    return ModelArchitecture(
        name=name,
        source="profiled model's config",
        num_layers=int(c.num_hidden_layers),
        hidden_size=int(c.hidden_size),
        ffn_size=int(c.intermediate_size),
        num_heads=heads,
        num_kv_heads=int(getattr(c, "num_key_value_heads", None) or heads),
        head_dim=int(head_dim),
        vocab_size=int(getattr(model, "num_kept", None) or c.vocab_size),
        tied_embeddings=hasattr(model, "num_kept")
        or bool(getattr(c, "tie_word_embeddings", False)),
    )


def pass_shapes(num_new: int, num_cached: int, gamma: int) -> list[tuple[int, int]]:
    """(new, cached) of the γ passes of one propose call: the pending context tokens on
    the cached prefix, then one drafted token per pass."""
    passes = [(num_new, num_cached)]
    for step in range(1, gamma):
        passes.append((1, num_cached + num_new + step - 1))
    return passes


@dataclass(frozen=True, slots=True)
class DraftSample:
    """One timed propose call: kind ('cold' / 'follow_up'), context length, γ, the summed
    shape of its passes, the number of passes and the wall time; or, ``batched``, one timed
    :meth:`BatchedDraftModel.draft` call over ``batch_size`` sessions of that context
    (:mod:`edgespec.profiling.draft_batch`; its shape summed over the passes' rows)."""

    kind: str
    context_tokens: int
    gamma: int
    shape: BatchShape
    num_passes: int
    time_s: float
    batch_size: int = 1
    batched: bool = False


def _lcp(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    while n < min(len(a), len(b) - 1) and a[n] == b[n]:
        n += 1
    return n


def measure_drafter(
    make: Any,
    vocab_size: int,
    context_lengths: Sequence[int],
    gamma: int,
    runs: int,
    warmup_runs: int,
    seed: int,
) -> list[DraftSample]:
    """Cold and follow-up propose calls at each context length (``make()`` builds the
    draft backend); warm-up calls are discarded."""
    if gamma < 1 or runs < 1:
        raise ValueError(f"need gamma >= 1 and runs >= 1, got {gamma}, {runs}")
    drafter: DraftBackend = make()
    source = PromptSource(vocab_size, seed)
    rng = np.random.default_rng(seed)
    samples = []
    for length in context_lengths:
        for run in range(warmup_runs + runs):
            drafter.reset()
            context = source.take(length)
            start = perf_counter()
            proposal = drafter.propose(context, gamma, 0.0, rng)
            cold_s = perf_counter() - start
            cached = (*context, *proposal.token_ids[:-1])
            grown = (*context, *source.tokens(1))
            common = _lcp(cached, grown)
            start = perf_counter()
            drafter.propose(grown, gamma, 0.0, rng)
            follow_s = perf_counter() - start
            if run < warmup_runs:
                continue
            for kind, new, old, took in (
                ("cold", length, 0, cold_s),
                ("follow_up", len(grown) - common, common, follow_s),
            ):
                passes = pass_shapes(new, old, gamma)
                samples.append(
                    DraftSample(kind, length, gamma, BatchShape.of(passes), len(passes), took)
                )
    return samples


def per_token_s(samples: Sequence[DraftSample]) -> float:
    """Mean follow-up propose call time per drafted token (batched calls left out)."""
    rows = [s.time_s / s.gamma for s in samples if s.kind == "follow_up" and not s.batched]
    if not rows:
        raise ValueError("no follow-up draft samples")
    return float(np.mean(rows))
