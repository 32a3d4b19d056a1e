"""An EAGLE-style *feature draft*: drafts from the target's own last-layer hidden states.

Terms. ``f_j`` is the target's feature at position ``j``: its last-layer hidden state (the
LM head's input, after the final norm), so the target's next token is
``argmax(head(f_j)) = x_{j+1}``. An *entry* ``j`` of the draft is the pair
``(f_j, x_{j+1})``: one linear layer mixes the two (each RMS-normalised), one
transformer block (causal attention over earlier entries, gated MLP) and a final norm give
``f̂_{j+1}``, the draft's guess of the target's next feature, whose argmax under the
target's head (cut to the K kept tokens) is the drafted ``x_{j+2}``.

Drafting a round after committed tokens ``x_0..x_n`` (the target has returned
``f_0..f_{n-1}``; ``x_n`` is its bonus/correction token, not yet forwarded): entries
``0..n-1`` use true features and are cached; step 1 is entry ``n-1``'s output; step
``s ≥ 2`` feeds ``(f̂_{n+s-2}, d_{n+s-1})`` (own prediction, own drafted token) as a
temporary entry at position ``n+s-2`` that attends to the cached entries and the round's
earlier temporary entries. :meth:`FeatureDraftNet.unrolled` computes exactly this for every
base position of a sequence at once ("training-time test"), so training sees the same
inputs the draft sees when it drafts.

The token embedding and the output head are the target's own rows for the kept tokens
(``embed_rows``: K kept rows + one "other" row; ``head_rows``: K rows), taken from the
target when the draft is loaded: only the trainable block is saved.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from edgespec.models.registry import FEATURE_DRAFT_MARKER
from edgespec.output_paths import readable_like, write_text_atomically

WEIGHTS_FILE = "model.safetensors"


@dataclass(frozen=True, slots=True)
class FeatureDraftConfig:
    """Shape of a feature draft and the target it belongs to."""

    target_name: str
    target_vocab_size: int
    hidden_size: int
    draft_token_ids: tuple[int, ...]
    num_heads: int = 8
    head_dim: int = 64
    intermediate_size: int = 1024
    rope_theta: float = 10000.0
    rms_eps: float = 1e-6

    def __post_init__(self) -> None:
        for name in ("target_vocab_size", "hidden_size", "num_heads", "head_dim"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"feature draft config: {name} must be >= 1")
        if self.head_dim % 2:
            raise ValueError("feature draft config: head_dim must be even (rotary embedding)")
        if not self.draft_token_ids:
            raise ValueError("feature draft config: draft_token_ids is empty")
        if min(self.draft_token_ids) < 0 or max(self.draft_token_ids) >= self.target_vocab_size:
            raise ValueError(
                f"feature draft config: draft_token_ids must lie in 0..{self.target_vocab_size - 1}"
            )

    @property
    def num_kept(self) -> int:
        return len(self.draft_token_ids)

    def to_json(self) -> str:
        data = asdict(self)
        data["draft_token_ids"] = list(self.draft_token_ids)
        return json.dumps({"edgespec_feature_draft": 1, **data})

    @classmethod
    def from_file(cls, path: Path) -> FeatureDraftConfig:
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"{path}: not a readable feature draft config ({exc})") from exc
        data.pop("edgespec_feature_draft", None)
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"{path}: unknown field(s) {', '.join(unknown)}")
        try:
            data["draft_token_ids"] = tuple(int(t) for t in data["draft_token_ids"])
            return cls(**data)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{path}: invalid feature draft config: {exc}") from exc


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate(x: torch.Tensor, positions: torch.Tensor, theta: float) -> torch.Tensor:
    """Rotary position embedding of ``x`` (B, H, L, D) at ``positions`` (L,)."""
    dim = x.shape[-1]
    inv = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float32, device=x.device) / dim)
    angles = positions.to(torch.float32)[:, None] * inv
    cos, sin = angles.cos(), angles.sin()
    even, odd = x[..., ::2], x[..., 1::2]
    return torch.stack((even * cos - odd * sin, even * sin + odd * cos), -1).flatten(-2)


class FeatureDraftNet(nn.Module):
    """The draft network (see the module docstring for the terms)."""

    embed_rows: torch.Tensor
    head_rows: torch.Tensor
    target_to_draft: torch.Tensor
    draft_to_target: torch.Tensor

    def __init__(
        self, config: FeatureDraftConfig, embed_rows: torch.Tensor, head_rows: torch.Tensor
    ) -> None:
        super().__init__()
        d, k = config.hidden_size, config.num_kept
        if tuple(embed_rows.shape) != (k + 1, d) or tuple(head_rows.shape) != (k, d):
            raise ValueError(
                f"feature draft needs embed rows ({k + 1}, {d}) and head rows ({k}, {d}), "
                f"got {tuple(embed_rows.shape)} and {tuple(head_rows.shape)}"
            )
        self.config = config
        self.register_buffer("embed_rows", embed_rows.detach().float().clone(), persistent=False)
        self.register_buffer("head_rows", head_rows.detach().float().clone(), persistent=False)
        lookup = torch.full((config.target_vocab_size,), k, dtype=torch.long)
        kept = torch.tensor(config.draft_token_ids, dtype=torch.long)
        lookup[kept] = torch.arange(k)
        self.register_buffer("target_to_draft", lookup, persistent=False)
        self.register_buffer("draft_to_target", kept, persistent=False)
        inner, eps = config.num_heads * config.head_dim, config.rms_eps
        self.norm_feature, self.norm_token = RMSNorm(d, eps), RMSNorm(d, eps)
        self.mix = nn.Linear(2 * d, d, bias=False)
        self.attn_norm, self.mlp_norm, self.out_norm = (RMSNorm(d, eps) for _ in range(3))
        self.q_proj = nn.Linear(d, inner, bias=False)
        self.k_proj = nn.Linear(d, inner, bias=False)
        self.v_proj = nn.Linear(d, inner, bias=False)
        self.o_proj = nn.Linear(inner, d, bias=False)
        self.gate_proj = nn.Linear(d, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(d, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, d, bias=False)

    def head_logits(self, features: torch.Tensor) -> torch.Tensor:
        """Logits over the K kept tokens (draft indices) of features (..., d)."""
        logits: torch.Tensor = features @ self.head_rows.T
        return logits

    def entry_inputs(self, features: torch.Tensor, draft_ids: torch.Tensor) -> torch.Tensor:
        """Mixed input of entries (f, x) — features (B, L, d), draft_ids (B, L)."""
        tokens = self.embed_rows[draft_ids]
        mixed: torch.Tensor = self.mix(
            torch.cat((self.norm_feature(features), self.norm_token(tokens)), -1)
        )
        return mixed

    def qkv(
        self, x: torch.Tensor, positions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Rotated queries and keys and the values, each (B, H, L, head_dim)."""
        h = self.attn_norm(x)
        b, length, _ = x.shape
        heads, dim, theta = self.config.num_heads, self.config.head_dim, self.config.rope_theta

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(b, length, heads, dim).transpose(1, 2)

        q = rotate(split(self.q_proj(h)), positions, theta)
        k = rotate(split(self.k_proj(h)), positions, theta)
        return q, k, split(self.v_proj(h))

    def finish(self, x: torch.Tensor, attended: torch.Tensor) -> torch.Tensor:
        """Residual attention output, then the MLP; returns the predicted features."""
        b, _, length, _ = attended.shape
        x = x + self.o_proj(attended.transpose(1, 2).reshape(b, length, -1))
        h = self.mlp_norm(x)
        x = x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))
        out: torch.Tensor = self.out_norm(x)
        return out

    def unrolled(
        self, features: torch.Tensor, draft_ids: torch.Tensor, num_steps: int
    ) -> list[torch.Tensor]:
        """Predictions of ``num_steps`` drafting steps from every base position.

        ``features`` (B, L, d) are true target features, ``draft_ids`` (B, L) the sequence
        in draft indices. Returns one (B, L−1, d) tensor per step s = 1..num_steps; entry j
        of step s predicts ``features[:, j + s]`` (valid where j + s < L). Step s ≥ 2 uses
        step s−1's prediction and the *true* token ``x_{j+s}``: when that token was
        drafted correctly this is exactly what drafting computes, and otherwise the round
        has already stopped, so acceptance is exact.
        """
        length = features.shape[1] - 1
        if length < 1:
            raise ValueError("unrolled needs sequences of at least 2 positions")
        base = torch.arange(length, device=features.device)
        scale = 1.0 / math.sqrt(self.config.head_dim)
        causal = torch.ones(length, length, dtype=torch.bool, device=features.device).tril()
        previous = features[:, :-1]
        keys: list[torch.Tensor] = []
        values: list[torch.Tensor] = []
        predictions = []
        for step in range(1, num_steps + 1):
            token_index = (base + step).clamp(max=length)
            x = self.entry_inputs(previous, draft_ids[:, token_index])
            q, k, v = self.qkv(x, base + step - 1)
            keys.append(k)
            values.append(v)
            scores = (q @ keys[0].transpose(-1, -2) * scale).masked_fill(~causal, float("-inf"))
            own = [(q * k_r).sum(-1, keepdim=True) * scale for k_r in keys[1:]]
            weights = torch.cat([scores, *own], -1).softmax(-1)
            attended = weights[..., :length] @ values[0]
            for r, v_r in enumerate(values[1:]):
                attended = attended + weights[..., length + r : length + r + 1] * v_r
            previous = self.finish(x, attended)
            predictions.append(previous)
        return predictions


def target_rows(target_model: Any, draft_token_ids: Sequence[int]) -> tuple[torch.Tensor, ...]:
    """(embed rows: kept + mean "other" row, head rows) from a HF causal LM target."""
    embed = target_model.get_input_embeddings().weight.detach().float()
    head = target_model.get_output_embeddings().weight.detach().float()
    kept = torch.tensor(list(draft_token_ids), dtype=torch.long, device=embed.device)
    return torch.cat((embed[kept], embed.mean(0, keepdim=True))), head[kept].clone()


def save_feature_draft(net: FeatureDraftNet, directory: Path) -> None:
    """Config and the trainable weights (fp16); the target's rows are not saved.

    The config is the marker the model loader looks for: an earlier save's is removed
    first and this one's written last, whole (:func:`write_text_atomically`), so a
    directory whose save was cut off is never taken for a complete feature draft."""
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    (directory / FEATURE_DRAFT_MARKER).unlink(missing_ok=True)
    state = {k: v.detach().to(torch.float16).contiguous() for k, v in net.state_dict().items()}
    save_file(state, str(directory / WEIGHTS_FILE))
    write_text_atomically(directory / FEATURE_DRAFT_MARKER, net.config.to_json())
    readable_like([directory / WEIGHTS_FILE], directory / FEATURE_DRAFT_MARKER)


def load_feature_draft(directory: Path, target_model: Any) -> FeatureDraftNet:
    """Load a saved feature draft; ``target_model`` supplies the embedding and head rows."""
    from safetensors.torch import load_file

    config = FeatureDraftConfig.from_file(directory / FEATURE_DRAFT_MARKER)
    vocab = int(target_model.get_input_embeddings().weight.shape[0])
    width = int(target_model.get_input_embeddings().weight.shape[1])
    if (vocab, width) != (config.target_vocab_size, config.hidden_size):
        raise ValueError(
            f"feature draft {directory} was trained for a target with vocabulary "
            f"{config.target_vocab_size} and hidden size {config.hidden_size}; this target has "
            f"{vocab} and {width}"
        )
    net = FeatureDraftNet(config, *target_rows(target_model, config.draft_token_ids))
    weights_path = directory / WEIGHTS_FILE
    if not weights_path.is_file():
        raise FileNotFoundError(f"feature draft {directory} has no {WEIGHTS_FILE}")
    state = {k: v.float() for k, v in load_file(str(weights_path)).items()}
    net.load_state_dict(state)
    net.eval()
    return net
