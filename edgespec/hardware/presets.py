"""The bundled presets a cost model is built from: a transformer's architecture
(:class:`ModelArchitecture`, ``edgespec/data/models/``) and an accelerator's peak numbers
(:class:`HardwareSpec`, ``edgespec/data/hardware/``), with their loaders."""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from edgespec.config import ConfigError, from_dict, read_yaml


@dataclass(frozen=True, slots=True)
class ModelArchitecture:
    """A transformer's architecture, as in its public ``config.json``."""

    name: str
    source: str
    num_layers: int
    hidden_size: int
    ffn_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    tied_embeddings: bool = False
    gated_ffn: bool = True
    dtype_bytes: int = 2

    @property
    def linear_params_per_layer(self) -> int:
        """Weights of one decoder block: Q, K, V, O projections and the FFN matrices."""
        q_dim = self.num_heads * self.head_dim
        kv_dim = self.num_kv_heads * self.head_dim
        attn = self.hidden_size * (2 * q_dim + 2 * kv_dim)
        ffn = (3 if self.gated_ffn else 2) * self.hidden_size * self.ffn_size
        return attn + ffn

    @property
    def weight_bytes(self) -> int:
        embed = self.vocab_size * self.hidden_size * (1 if self.tied_embeddings else 2)
        return (self.num_layers * self.linear_params_per_layer + embed) * self.dtype_bytes

    @property
    def kv_bytes_per_token(self) -> int:
        return 2 * self.num_layers * self.num_kv_heads * self.head_dim * self.dtype_bytes

    def flops(self, num_linear: int, num_interactions: int) -> float:
        """FLOPs of a pass: 2·params·N_lin (blocks and LM head) + 4·J·q_dim·N_int."""
        per_token = 2 * (self.num_layers * self.linear_params_per_layer)
        per_token += 2 * self.hidden_size * self.vocab_size
        attn = 4 * self.num_layers * self.num_heads * self.head_dim
        return float(per_token * num_linear + attn * num_interactions)


@dataclass(frozen=True, slots=True)
class HardwareSpec:
    """An accelerator's peak numbers (vendor datasheet) and assumed efficiencies."""

    name: str
    source: str
    peak_tflops: float
    memory_bandwidth_gb_s: float
    memory_gb: float
    compute_efficiency: float = 0.5
    memory_efficiency: float = 0.7
    overhead_s: float = 0.002

    def validate(self) -> None:
        for name in ("peak_tflops", "memory_bandwidth_gb_s", "memory_gb"):
            if getattr(self, name) <= 0:
                raise ConfigError(name, f"must be > 0, got {getattr(self, name)}")
        for name in ("compute_efficiency", "memory_efficiency"):
            if not 0 < getattr(self, name) <= 1:
                raise ConfigError(name, f"must be in (0, 1], got {getattr(self, name)}")


def _data_dir(kind: str) -> Path:
    return Path(str(resources.files("edgespec") / "data" / kind))


def available(kind: str) -> list[str]:
    """Names of the bundled presets of ``kind`` ('models', 'hardware', 'hardware/profiles')."""
    return sorted(p.stem for p in _data_dir(kind).glob("*.yaml"))


def load_named(kind: str, name: str) -> dict[str, Any]:
    """Bundled preset ``name`` of ``kind``: a fresh copy of the mapping, its file parsed once
    per process (a reproduction resolves hundreds of scenarios naming the same presets)."""
    return copy.deepcopy(_parsed_preset(kind, name))


@functools.cache
def _parsed_preset(kind: str, name: str) -> dict[str, Any]:
    path = _data_dir(kind) / f"{name}.yaml"
    if not path.is_file():
        field = {"models": "model", "hardware": "hardware"}.get(kind, "profile")
        raise ConfigError(field, f"no {kind} preset named {name!r}; known: {available(kind)}")
    return read_yaml(path)


def load_architecture(name: str) -> ModelArchitecture:
    return from_dict(ModelArchitecture, load_named("models", name), f"models/{name}")


def load_hardware(name: str) -> HardwareSpec:
    return from_dict(HardwareSpec, load_named("hardware", name), f"hardware/{name}")
