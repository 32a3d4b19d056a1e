"""The target's and the draft's greedy decoding behind WISV's capture
(:mod:`edgespec.learn.wisv.capture`, steps 1, 2 and 4's continuations), on real models.

* :func:`target_reference`: the target decodes greedily on its own KV cache until the
  stopping rule says the output is final, EOS or ``max_new_tokens``. Each step keeps the
  target's last-layer hidden state, after the final norm, at the input position whose
  logits predict the next token, so row j of the hidden states belongs to output token j.
* :func:`draft_states`: one forward of the draft over a token sequence gives its argmax
  and post-norm hidden state at every position.
* :func:`continue_greedy`: from output positions j with a substituted token d, the target
  alone decodes on, as one left-padded batch that reuses the reference's KV cache (the
  prefix O[:j] is shared). A finished row leaves the batch. Masks and position ids are
  built from true token positions
  (:func:`~edgespec.runtime.backends.attention_mask.batch_attention`, sliding windows
  included), as the runtime's target backend builds them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import torch
from transformers import DynamicCache

from edgespec.models.trimmed import TrimmedVocabDraft
from edgespec.runtime.backends.attention_mask import AttentionLayout, batch_attention
from edgespec.runtime.backends.base import ForwardItem

Layers = tuple[tuple[torch.Tensor, torch.Tensor], ...]
"""Per-layer (keys, values), each [1, kv_heads, length, head_dim]: one sequence's cache."""
FloatArray = npt.NDArray[np.float32]


class Stopping(Protocol):
    """When an output (its token ids) is final, besides EOS and ``max_new_tokens``."""

    def finished(self, output_ids: Sequence[int]) -> bool: ...


def target_argmax(model: Any, hidden: torch.Tensor) -> list[int]:
    """The target's greedy token for each row of ``hidden`` (R × d): its own head (a
    logit soft-cap is monotone and leaves the argmax alone), one product as the runtime's
    backend computes it."""
    logits = model.lm_head(hidden)
    return [int(t) for t in logits.argmax(dim=-1).tolist()]


def target_forward(
    model: Any,
    layout: AttentionLayout,
    cache: DynamicCache,
    width: int,
    kv_lens: Sequence[int],
    tokens: Sequence[Sequence[int]],
) -> torch.Tensor:
    """The target's post-norm hidden states [B, N, d] for each row's new ``tokens`` (equal
    lengths) on a cache ``width`` columns wide holding row b's ``kv_lens[b]`` tokens
    right-aligned; the cache grows by N columns."""
    new = len(tokens[0])
    items = [
        ForwardItem(None, kv_len, tuple(t), 1) for kv_len, t in zip(kv_lens, tokens, strict=True)
    ]
    dtype = next(model.parameters()).dtype
    device = next(model.parameters()).device
    mask, positions = batch_attention(items, width, new, layout, dtype, device)
    ids = torch.tensor([list(t) for t in tokens], dtype=torch.long, device=device)
    out = model.model(
        input_ids=ids,
        attention_mask=mask,
        position_ids=positions,
        past_key_values=cache,
        use_cache=True,
    )
    hidden: torch.Tensor = out.last_hidden_state
    return hidden


def cache_layers(cache: DynamicCache) -> Layers:
    layers: Any = cache.layers
    return tuple((layer.keys, layer.values) for layer in layers)


@dataclass(frozen=True, slots=True, eq=False)
class Reference:
    """The target-only output, its hidden rows (row j predicts token j) and its cache
    (covering prompt + output[:-1])."""

    output: tuple[int, ...]
    hidden: FloatArray
    layers: Layers


@torch.inference_mode()
def target_reference(
    model: Any,
    layout: AttentionLayout,
    prompt_ids: Sequence[int],
    max_new_tokens: int,
    eos: frozenset[int],
    outcome: Stopping,
) -> Reference:
    """Step 1 of the module docstring."""
    cache = DynamicCache()
    hidden = target_forward(model, layout, cache, 0, [0], [list(prompt_ids)])
    rows = [hidden[0, -1]]
    output: list[int] = []
    while True:
        token = target_argmax(model, rows[-1][None])[0]
        output.append(token)
        if token in eos or len(output) >= max_new_tokens or outcome.finished(output):
            break
        kv_len = len(prompt_ids) + len(output) - 1
        rows.append(target_forward(model, layout, cache, kv_len, [kv_len], [[token]])[0, -1])
    states = torch.stack(rows).float().cpu().numpy()
    return Reference(tuple(output), states, cache_layers(cache))


def draft_forward(
    model: Any, token_ids: Sequence[int], cache: DynamicCache | None = None
) -> tuple[list[int], torch.Tensor]:
    """The draft's greedy token (target ids) and post-norm hidden state at every new
    position of ``token_ids``, after the tokens ``cache`` holds (none: a fresh forward);
    the cache grows by them. A trimmed-vocabulary draft answers in target ids."""
    ids = torch.tensor([list(token_ids)], dtype=torch.long)
    if isinstance(model, TrimmedVocabDraft):
        out = model.model(input_ids=model.to_draft_ids(ids), past_key_values=cache, use_cache=True)
        hidden = out.last_hidden_state[0]
        weight = model.model.embed_tokens.weight[: model.num_kept]
        greedy = model.to_target_ids((hidden @ weight.T).argmax(dim=-1))
    else:
        hidden = model.model(input_ids=ids, past_key_values=cache, use_cache=True)
        hidden = hidden.last_hidden_state[0]
        greedy = model.lm_head(hidden).argmax(dim=-1)
    return [int(t) for t in greedy.tolist()], hidden


@torch.inference_mode()
def draft_states(model: Any, token_ids: Sequence[int]) -> tuple[list[int], FloatArray]:
    """The draft's greedy token and post-norm hidden state at every position of
    ``token_ids`` (one forward; row i predicts token i + 1). A trimmed-vocabulary draft
    answers in target ids."""
    greedy, hidden = draft_forward(model, token_ids)
    return greedy, hidden.float().cpu().numpy()


@dataclass(slots=True)
class _Row:
    index: int
    prefix_len: int
    limit: int
    output: list[int]


def _select(cache: DynamicCache, keep: Sequence[int]) -> DynamicCache:
    index = torch.tensor(list(keep), dtype=torch.long)
    data = [(k.index_select(0, index), v.index_select(0, index)) for k, v in cache_layers(cache)]
    return DynamicCache(ddp_cache_data=data)


@torch.inference_mode()
def continue_greedy(
    model: Any,
    layout: AttentionLayout,
    reference: Reference,
    prompt_len: int,
    starts: Sequence[tuple[int, int]],
    max_new_tokens: int,
    eos: frozenset[int],
    outcome: Stopping,
    window: int | None = None,
) -> tuple[list[tuple[int, ...]], int]:
    """(the output of each (j, d) in ``starts`` — O[:j] + d, then target-only greedy
    decoding until the outcome is final, EOS, ``max_new_tokens`` or, with ``window``,
    j + ``window`` tokens —, the continuation tokens decoded). One left-padded batch on
    the reference's cache (step 4)."""
    ref = reference.output
    if window is not None and window < 1:
        raise ValueError(f"window must be >= 1, got {window}")

    def done(r: _Row) -> bool:
        out = r.output
        return out[-1] in eos or len(out) >= r.limit or outcome.finished(out)

    def limit(j: int) -> int:
        return max_new_tokens if window is None else min(max_new_tokens, j + window)

    rows = [_Row(i, prompt_len + j, limit(j), [*ref[:j], d]) for i, (j, d) in enumerate(starts)]
    if any(not 0 <= j < len(ref) for j, _ in starts):
        raise ValueError("a continuation starts outside the reference output")
    active = [r for r in rows if not done(r)]
    decoded = 0
    if active:
        width = max(r.prefix_len for r in active)
        data = []
        for k, v in reference.layers:
            keys = k.new_zeros((len(active), k.shape[1], width, k.shape[3]))
            values = v.new_zeros((len(active), v.shape[1], width, v.shape[3]))
            for b, r in enumerate(active):
                keys[b, :, width - r.prefix_len :] = k[0, :, : r.prefix_len]
                values[b, :, width - r.prefix_len :] = v[0, :, : r.prefix_len]
            data.append((keys, values))
        cache = DynamicCache(ddp_cache_data=data)
        step = 0
        while active:
            kv_lens = [r.prefix_len + step for r in active]
            hidden = target_forward(
                model, layout, cache, width + step, kv_lens, [[r.output[-1]] for r in active]
            )
            step += 1
            for r, token in zip(active, target_argmax(model, hidden[:, -1]), strict=True):
                r.output.append(token)
            decoded += len(active)
            keep = [b for b, r in enumerate(active) if not done(r)]
            if len(keep) < len(active):
                active = [active[b] for b in keep]
                if active:
                    cache = _select(cache, keep)
    return [tuple(r.output) for r in rows], decoded
