"""The Hugging Face transformers target backend (CPU or GPU, any causal LM whose attention
:mod:`edgespec.runtime.backends.attention_mask` can mask exactly).

Batched verification: every item's cached prefix is left-padded to the longest prefix
P in the batch and its new tokens are left-padded to the longest new block N; every pass,
of one row or many, chain or token tree, gets explicit 4-D masks and position ids built
from true token positions (:func:`~edgespec.runtime.backends.attention_mask.batch_attention`),
so each item sees exactly its own tokens at its own positions, sliding windows included.
Every row's new tokens end in the last column, so the LM head runs only on the last
``max(num_logits)`` positions (``logits_to_keep``): a cold start does not pay for
vocabulary logits over its whole prompt. The per-item KV is cut back out of the padded
batch cache afterwards. A batch whose items differ so much in shape that padding would
dominate (a cold start beside follow-ups) is split into several passes
(:mod:`.padding`); the batch cache is padded and cut by :mod:`.padded_kv`. At load, a model
whose attention cannot be masked exactly is refused (``UnsupportedAttentionError``), and a
padded probe batch must reproduce the model's own unpadded logits (``probe_progress``: told
each of its one-token passes)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Literal, get_args

import numpy as np
import numpy.typing as npt
import torch

from edgespec.runtime.backends.attention_mask import (
    attention_layout,
    batch_attention,
    check_exact_masking,
    in_key_order,
    key_order,
)
from edgespec.runtime.backends.base import ForwardItem, ForwardOutput
from edgespec.runtime.backends.batch_invariant import (
    KEY_ORDER,
    ROW_MULTIPLE,
    ROW_MULTIPLE_KEY,
    make_batch_invariant,
)
from edgespec.runtime.backends.device_rows import device_rows
from edgespec.runtime.backends.exactness import (
    InexactBackendError,
    Inexactness,
    exactness_problem,
    probe_length,
)
from edgespec.runtime.backends.lm_head import (
    BLOCKED_HEAD_MAX_ROWS,
    blocked_head,
    head_logits,
    hidden_head_problem,
    plain_head,
)
from edgespec.runtime.backends.padded_kv import Layers, padded_cache, row_kv
from edgespec.runtime.backends.padding import PREFILL_CHUNK_TOKENS, pass_groups

Numerics = Literal["exact", "lossy"]
"""``exact``: batch-invariant kernels (:mod:`~edgespec.runtime.backends.batch_invariant`),
checked bit for bit at load; ``lossy``: the library's own batched kernels, whose last bits
may depend on the batch (``--backend transformers-lossy``)."""


def eos_ids(model: Any) -> frozenset[int]:
    """The model's EOS ids (generation config, else model config)."""
    eos = getattr(model.generation_config, "eos_token_id", None)
    if eos is None:
        eos = getattr(model.config, "eos_token_id", None)
    if eos is None:
        return frozenset()
    return frozenset([eos] if isinstance(eos, int) else eos)


def _with_hidden_head(out: ForwardOutput, head: npt.NDArray[np.float32]) -> ForwardOutput:
    """``out`` with the hidden rows of the chunk-prefilled head in front of its own."""
    assert out.hidden is not None
    return ForwardOutput(out.rows, out.kv, np.concatenate([head, out.hidden]))


class TransformersTarget:
    """:class:`~edgespec.runtime.backends.base.TargetBackend` over a transformers causal LM.

    KV states are :data:`Layers` tuples holding exactly the session's real tokens.
    """

    def __init__(
        self,
        model: Any,
        eos_token_ids: frozenset[int] | None = None,
        blocked_head_logits: bool = False,
        split_padded_batches: bool = True,
        prefill_chunk_tokens: int = PREFILL_CHUNK_TOKENS,
        check_masks: bool = True,
        numerics: Numerics = "exact",
        row_multiple: int = ROW_MULTIPLE,
        probe_progress: Callable[[int, int], None] | None = None,  # exactness_problem's on_pass
    ) -> None:
        if prefill_chunk_tokens < 1:
            raise ValueError(f"prefill_chunk_tokens must be >= 1, got {prefill_chunk_tokens}")
        if numerics not in get_args(Numerics):
            raise ValueError(f"numerics must be one of {get_args(Numerics)}, got {numerics!r}")
        self.numerics: Numerics = numerics
        self.inexactness: Inexactness | None = None
        """What the load-time self-check found (``None``: the same bits, or not run)."""
        self._chunk = prefill_chunk_tokens
        self._model = model
        self._device: torch.device = next(model.parameters()).device
        self._vocab_size = int(model.config.get_text_config().vocab_size)
        self._eos = eos_ids(model) if eos_token_ids is None else eos_token_ids
        # the lossy head in vocabulary blocks on a CPU only when asked (no gain on our CPUs:
        # benchmarks/results/head-speed-cpu-*.json); the exact one is, as invariant_linear
        blocked = blocked_head_logits and self._device.type == "cpu" and numerics == "lossy"
        self._head = plain_head(model) if blocked else None
        self.hidden_state_problem = hidden_head_problem(model)  # return_hidden refused when set
        self._split = split_padded_batches
        self._dtype = next(model.parameters()).dtype
        self._layout = attention_layout(model)  # refuses what cannot be masked exactly
        self._rows = row_multiple
        if numerics == "exact":
            make_batch_invariant(model, row_multiple)
        if check_masks:  # False only for a pass recorded by runtime/backends/mask_check_cache
            self._check_exact_masking()
            self._check_batch_invariance(probe_progress)

    def _check_batch_invariance(self, progress: Callable[[int, int], None] | None) -> None:
        """The exactness self-check (:func:`exactness_problem`): the exact mode refuses the
        model when batched logits differ from one-at-a-time ones; the lossy mode keeps what
        differed in :attr:`inexactness`."""
        length = probe_length(self._layout.sliding_window, self.max_context_tokens, self._rows)
        # a causal LM without a separate body (a wrapper) pays its head at every position
        body = isinstance(getattr(self._model, "model", None), torch.nn.Module)
        extend = self._extend if body else None
        self.inexactness = exactness_problem(self, length, extend=extend, on_pass=progress)
        if self.inexactness is not None and self.numerics == "exact":
            raise InexactBackendError(
                f"the transformers target is not batch-invariant on {self._device} in "
                f"{str(self._dtype).removeprefix('torch.')} ({self.inexactness}); refusing to "
                "serve approximately (the lossy mode must be chosen by name: --backend "
                "transformers-lossy)"
            )

    @property
    def vocab_size(self) -> int:
        return self._vocab_size

    @property
    def hidden_size(self) -> int:
        """The width of the hidden rows a pass returns (:attr:`ForwardOutput.hidden`)."""
        return int(self._model.config.get_text_config().hidden_size)

    @property
    def device(self) -> torch.device:
        """Where the model, its KV states and its passes live."""
        return self._device

    @property
    def eos_token_ids(self) -> frozenset[int]:
        return self._eos

    @property
    def max_context_tokens(self) -> int:
        text = self._model.config.get_text_config()
        return int(getattr(text, "max_position_embeddings", None) or 1 << 31)

    def forward(self, items: Sequence[ForwardItem]) -> list[ForwardOutput]:
        """One padded pass, or (``split_padded_batches``) one per group of similar shape.

        An item with more than ``prefill_chunk_tokens`` new tokens first forwards its
        leading tokens (those that need no logits) alone in chunks of that size, so no
        pass's explicit masks exceed ``chunk × (cached + chunk)`` per row (a long prompt's
        cold start would otherwise build a prompt² mask); its hidden rows are kept."""
        prefilled = [self._prefill_long(item) for item in items]
        outputs = self._forward_grouped([item for item, _ in prefilled])
        return [
            out if head is None else _with_hidden_head(out, head)
            for (_, head), out in zip(prefilled, outputs, strict=True)
        ]

    def _prefill_long(
        self, item: ForwardItem
    ) -> tuple[ForwardItem, npt.NDArray[np.float32] | None]:
        """(the item left after chunked prefill of its head, the head's hidden rows)."""
        tokens = item.new_token_ids
        keep = max(item.num_logits, len(item.tree_parents or ()) + 1)
        if len(tokens) <= self._chunk or len(tokens) - keep < 1:
            return item, None
        kv, kv_len, rows = item.kv, item.kv_len, []
        start = 0
        while len(tokens) - start - keep > 0 and len(tokens) - start > self._chunk:
            size = min(self._chunk, len(tokens) - start - keep)
            piece = ForwardItem(kv, kv_len, tokens[start : start + size], 1, item.want_hidden)
            out = self._forward_pass([piece])[0]
            kv, kv_len, start = out.kv, kv_len + size, start + size
            if out.hidden is not None:
                rows.append(out.hidden)
        rest = replace(item, kv=kv, kv_len=kv_len, new_token_ids=tokens[start:])
        return rest, (np.concatenate(rows) if rows else None)

    def _forward_grouped(self, items: Sequence[ForwardItem]) -> list[ForwardOutput]:
        groups = [list(range(len(items)))]
        if self._split and len(items) > 1:
            groups = pass_groups([(len(i.new_token_ids), i.kv_len) for i in items])
        if len(groups) == 1:
            return self._forward_pass(items)
        results: dict[int, ForwardOutput] = {}
        for group in groups:
            outputs = self._forward_pass([items[i] for i in group])
            results.update(zip(group, outputs, strict=True))
        return [results[i] for i in range(len(items))]

    def _pass_inputs(self, items: Sequence[ForwardItem]) -> dict[str, Any]:
        """The model's inputs for one padded pass over ``items`` (left-padded rows)."""
        max_prefix = max(item.kv_len for item in items)
        max_new = max(len(item.new_token_ids) for item in items)
        input_ids = torch.zeros((len(items), max_new), dtype=torch.long)
        for row, item in enumerate(items):
            input_ids[row, max_new - len(item.new_token_ids) :] = torch.tensor(item.new_token_ids)
        mask, position_ids = batch_attention(
            items, max_prefix, max_new, self._layout, self._dtype, self._device
        )
        inputs: dict[str, Any] = {
            "input_ids": input_ids.to(self._device),
            "attention_mask": mask,
            "position_ids": position_ids,
            "past_key_values": padded_cache(items, max_prefix),
            "use_cache": True,
        }
        if self.numerics == "exact":  # the attention's canonical key order, and the mask in it
            order = key_order(items, max_prefix, max_new, self._device)
            inputs["attention_mask"], inputs[KEY_ORDER] = in_key_order(mask, order), order
            inputs[ROW_MULTIPLE_KEY] = self._rows
        return inputs

    @torch.inference_mode()
    def _extend(self, kv: Layers | None, kv_len: int, token: int) -> Layers:
        """The exactness probe's :data:`~edgespec.runtime.backends.exactness.ExtendKV`:
        ``token`` alone through the model's body, :meth:`_forward_pass` before its head."""
        out = self._model.model(**self._pass_inputs([ForwardItem(kv, kv_len, (token,), 1)]))
        layers = [(layer.keys, layer.values) for layer in out.past_key_values.layers]
        return row_kv(layers, 0, 0, 0, kv_len, 1)

    @torch.inference_mode()
    def _forward_pass(self, items: Sequence[ForwardItem]) -> list[ForwardOutput]:
        batch = len(items)
        max_prefix = max(item.kv_len for item in items)
        max_new = max(len(item.new_token_ids) for item in items)
        keep = max(item.num_logits for item in items)
        inputs = self._pass_inputs(items)
        weight = self._head if 1 < batch * keep <= BLOCKED_HEAD_MAX_ROWS else None
        hidden: torch.Tensor | None = None
        if weight is not None or any(item.want_hidden for item in items):  # head applied here
            out = self._model.model(**inputs)
            hidden = out.last_hidden_state
            last = hidden[:, -keep:]
            logits = (
                head_logits(self._model, last) if weight is None else blocked_head(last, weight)
            )
        else:
            out = self._model(**inputs, logits_to_keep=keep)
            logits = out.logits[:, -keep:]
        if bool(torch.isnan(logits).any()):  # padding must never leak into a real row
            raise RuntimeError("NaN logits in a batched forward pass")
        rows = device_rows(logits, [item.num_logits for item in items])
        layers = [(layer.keys, layer.values) for layer in out.past_key_values.layers]
        results = []
        for row, item in enumerate(items):
            kv = row_kv(
                layers,
                row,
                max_prefix - item.kv_len,
                max_new - len(item.new_token_ids),
                max_prefix,
                batch,
            )
            states = None
            if item.want_hidden and hidden is not None:  # the real new tokens end the row
                real = hidden[row, max_new - len(item.new_token_ids) :]
                states = real.float().cpu().numpy().astype(np.float32)  # a copy, not a view
            results.append(ForwardOutput(rows[row], kv, states))
        return results

    def _check_exact_masking(self) -> None:
        """:func:`~edgespec.runtime.backends.attention_mask.check_exact_masking` here."""
        check_exact_masking(self._model, self._forward_pass, self._layout, self.max_context_tokens)

    def crop(self, kv: Layers, num_tokens: int) -> Layers:
        """A view: the dropped tail (at most the rejected draft tokens) stays allocated
        until the next forward pass replaces the tensors."""
        return tuple((k[:, :, :num_tokens], v[:, :, :num_tokens]) for k, v in kv)

    def gather(self, kv: Layers, positions: Sequence[int]) -> Layers:
        if list(positions) == list(range(len(positions))):
            return self.crop(kv, len(positions))
        index = torch.tensor(list(positions), dtype=torch.long, device=kv[0][0].device)
        return tuple((k.index_select(2, index), v.index_select(2, index)) for k, v in kv)

    def kv_bytes(self, kv: Layers) -> int:
        return sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in kv)
