"""Length tables: a dataset's paired (prompt, output) lengths, bundled in
``edgespec/data/lengths/``, that a lengths workload resamples."""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from edgespec.config import ConfigError, ConfigFileError
from edgespec.errors import did_you_mean


@dataclass(frozen=True, slots=True)
class LengthTable:
    """Paired (prompt, output) length samples; a draw resamples one index."""

    dataset: str
    prompt_tokens: tuple[int, ...]
    output_tokens: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.prompt_tokens or len(self.prompt_tokens) != len(self.output_tokens):
            raise ValueError(f"length table {self.dataset!r}: needs equal, non-empty columns")
        if min(self.output_tokens) < 1 or min(self.prompt_tokens) < 1:
            raise ValueError(f"length table {self.dataset!r}: lengths out of range")

    def sample(self, rng: np.random.Generator) -> tuple[int, int]:
        i = int(rng.integers(len(self.prompt_tokens)))
        return self.prompt_tokens[i], self.output_tokens[i]


def load_length_table(dataset: str) -> LengthTable:
    """``edgespec/data/lengths/<dataset>.json`` (keys prompt_tokens, output_tokens)."""
    folder = Path(str(resources.files("edgespec") / "data" / "lengths"))
    path = folder / f"{dataset}.json"
    if not path.is_file():
        known = sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []
        raise ConfigError(
            "workload.dataset",
            f"no length table {dataset!r}; known: {known}{did_you_mean(dataset, known)}",
        )
    data = json.loads(path.read_text())
    try:
        return LengthTable(dataset, tuple(data["prompt_tokens"]), tuple(data["output_tokens"]))
    except (KeyError, ValueError) as exc:
        raise ConfigFileError(str(path), f"bad length table: {exc}") from exc
