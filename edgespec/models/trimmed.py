"""A small draft model with a trimmed vocabulary that speaks the target's token ids.

The target's head covers 262k tokens, which dominates its cost; the draft keeps only the
K tokens the target emits most often. Its vocabulary is ``draft_token_ids`` (K target ids);
draft index K is a shared "other" slot for inputs outside the vocabulary. The output head
is tied to the first K input-embedding rows and has no "other" output: every target id
outside the vocabulary gets exactly zero draft probability.

:class:`TrimmedVocabDraft` is a Hugging Face ``PreTrainedModel`` with ``GenerationMixin``:
``forward(input_ids, past_key_values, ...)`` takes *target* ids and returns logits over the
*full* target vocabulary (``-inf`` outside the K kept tokens), so it plugs into any code that
drives a HF causal LM, including ``model.generate(..., assistant_model=draft)``. Speculative
loops that only need the argmax call :meth:`TrimmedVocabDraft.trimmed_forward`, which skips
the 262k-wide scatter, and map indices back with :meth:`to_target_ids`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn
from transformers import GenerationMixin, LlamaConfig, LlamaModel, PreTrainedModel
from transformers.modeling_outputs import CausalLMOutputWithPast
from transformers.utils import SAFE_WEIGHTS_INDEX_NAME, SAFE_WEIGHTS_NAME

from edgespec.models.registry import TRIMMED_MARKER as TRIMMED_MARKER  # re-exported
from edgespec.models.registry import TRIMMED_MODEL_TYPE
from edgespec.output_paths import readable_like, write_text_atomically


class TrimmedDraftConfig(LlamaConfig):  # type: ignore[misc,no-untyped-call]
    """Llama config whose ``vocab_size`` is the *target's*; the draft keeps ``draft_token_ids``."""

    model_type = TRIMMED_MODEL_TYPE

    def __init__(
        self, draft_token_ids: Sequence[int] = (), target_name: str = "", **kwargs: Any
    ) -> None:
        self.draft_token_ids = [int(t) for t in draft_token_ids]
        self.target_name = target_name
        super().__init__(**kwargs)


def build_id_maps(
    draft_token_ids: Sequence[int], target_vocab_size: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(target→draft lookup of length V with K for "other", draft→target ids of length K)."""
    kept = [int(t) for t in draft_token_ids]
    if not kept:
        raise ValueError("draft_token_ids is empty")
    if min(kept) < 0 or max(kept) >= target_vocab_size:
        raise ValueError(f"draft_token_ids must lie in 0..{target_vocab_size - 1}")
    if len(set(kept)) != len(kept):
        raise ValueError("draft_token_ids contains duplicates")
    # Explicit CPU device: from_pretrained builds the module under a meta-device context.
    ids = torch.tensor(kept, dtype=torch.long, device="cpu")
    lookup = torch.full((target_vocab_size,), len(kept), dtype=torch.long, device="cpu")
    lookup[ids] = torch.arange(len(kept), device="cpu")
    return lookup, ids


class TrimmedVocabDraft(PreTrainedModel, GenerationMixin):  # type: ignore[misc,no-untyped-call]
    """Llama-style draft over K kept target tokens, exposing full-vocabulary logits."""

    config_class = TrimmedDraftConfig
    base_model_prefix = "model"
    _supports_sdpa = True

    def __init__(self, config: TrimmedDraftConfig) -> None:
        super().__init__(config)
        num_kept = len(config.draft_token_ids)
        inner = LlamaConfig(**{**config.to_dict(), "vocab_size": num_kept + 1})
        self.model = LlamaModel(inner)
        build_id_maps(config.draft_token_ids, config.vocab_size)  # validate early
        self._id_maps: tuple[torch.Tensor, torch.Tensor] | None = None
        self.num_kept = num_kept
        self.post_init()  # type: ignore[no-untyped-call]

    def _maps(self) -> tuple[torch.Tensor, torch.Tensor]:
        # Plain attributes, not buffers: from_pretrained would leave buffers uninitialized.
        device = self.model.embed_tokens.weight.device
        if self._id_maps is None or self._id_maps[0].device != device:
            lookup, kept = build_id_maps(self.config.draft_token_ids, self.config.vocab_size)
            self._id_maps = (lookup.to(device), kept.to(device))
        return self._id_maps

    def get_input_embeddings(self) -> nn.Module:
        embed: nn.Module = self.model.embed_tokens
        return embed

    def to_draft_ids(self, target_ids: torch.Tensor) -> torch.Tensor:
        """Target ids → draft indices (K for ids outside the kept vocabulary)."""
        return self._maps()[0][target_ids]

    def to_target_ids(self, draft_ids: torch.Tensor) -> torch.Tensor:
        """Draft output indices (0..K-1) → target ids."""
        return self._maps()[1][draft_ids]

    def trimmed_forward(
        self,
        input_ids: torch.Tensor,
        past_key_values: Any = None,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        use_cache: bool = True,
        logits_to_keep: int = 0,
    ) -> tuple[torch.Tensor, Any]:
        """(B × T × K logits over the kept tokens, cache). ``input_ids`` are target ids."""
        out = self.model(
            input_ids=self.to_draft_ids(input_ids),
            attention_mask=attention_mask,
            position_ids=position_ids,
            past_key_values=past_key_values,
            use_cache=use_cache,
        )
        hidden = out.last_hidden_state
        if logits_to_keep:
            hidden = hidden[:, -logits_to_keep:]
        weight = self.model.embed_tokens.weight[: self.num_kept]
        return nn.functional.linear(hidden, weight), out.past_key_values

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        past_key_values: Any = None,
        inputs_embeds: torch.Tensor | None = None,
        use_cache: bool | None = None,
        logits_to_keep: int = 0,
        **kwargs: Any,
    ) -> CausalLMOutputWithPast:
        if input_ids is None:
            raise ValueError("TrimmedVocabDraft needs input_ids (target token ids)")
        small, cache = self.trimmed_forward(
            input_ids,
            past_key_values=past_key_values,
            attention_mask=attention_mask,
            position_ids=position_ids,
            use_cache=bool(use_cache) if use_cache is not None else True,
            logits_to_keep=logits_to_keep,
        )
        full = small.new_full((*small.shape[:-1], self.config.vocab_size), float("-inf"))
        full.index_copy_(-1, self._maps()[1], small)
        return CausalLMOutputWithPast(logits=full, past_key_values=cache)

    @classmethod
    def load(cls, directory: Path, dtype: torch.dtype = torch.float32) -> TrimmedVocabDraft:
        """Load a draft saved with :meth:`save` (weights may be stored in fp16)."""
        model = cls.from_pretrained(str(directory), dtype=dtype)
        model.eval()  # type: ignore[no-untyped-call]
        return model  # type: ignore[no-any-return]

    def save(self, directory: Path, dtype: torch.dtype = torch.float16) -> tuple[Path, ...]:
        """save_pretrained in ``dtype`` plus the marker file the model loader looks for: an
        earlier save's marker is removed first and this one's written last, whole, so a
        directory whose save was cut off is never taken for a complete draft. Returns the
        files the draft is saved as (:func:`saved_files`)."""
        directory.mkdir(parents=True, exist_ok=True)
        (directory / TRIMMED_MARKER).unlink(missing_ok=True)
        original = next(self.parameters()).dtype
        self.to(dtype)  # type: ignore[arg-type]
        try:
            self.save_pretrained(str(directory))
        finally:
            self.to(original)  # type: ignore[arg-type]
        marker = json.dumps({"target": self.config.target_name, "num_kept": self.num_kept})
        write_text_atomically(directory / TRIMMED_MARKER, marker + "\n")
        readable_like(saved_files(directory), directory / TRIMMED_MARKER)  # weights were 0600
        return saved_files(directory)


def saved_files(directory: Path) -> tuple[Path, ...]:
    """The files of the trimmed draft saved in ``directory`` (by
    :meth:`TrimmedVocabDraft.save`): its config and generation config, its weights (one
    file, or an index and the files it names) and its marker; any other file there is not
    the draft's."""
    index = directory / SAFE_WEIGHTS_INDEX_NAME
    parts = set(json.loads(index.read_text())["weight_map"].values()) if index.is_file() else ()
    names = ("config.json", "generation_config.json", SAFE_WEIGHTS_NAME, index.name, *sorted(parts))
    paths = (directory / name for name in (*names, TRIMMED_MARKER))
    return tuple(path for path in paths if path.is_file())
