"""Several ``wisv-data`` datasets as one for ``edgespec train wisv --data A --data B``.

Prompt indices are renumbered so that no two datasets' episodes merge: dataset k's
prompt i becomes k·:data:`PROMPT_STRIDE` + i. Each episode's **group** is (the dataset's
``dataset`` name, i): the same train prompt captured twice (lossless and rollout, framed
and unframed) is one group, and the train/held-out split keeps a group on one side.

With ``labels="local"`` a rollout capture's rows are labelled by their local label
(``local_critical``, :mod:`edgespec.learn.wisv.rollout`); a lossless capture has none and
keeps its base labels, which are its local ones.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from edgespec.learn.wisv.dataset import WisvDataset

if TYPE_CHECKING:
    from edgespec.learn.wisv.train import Groups

PROMPT_STRIDE = 1_000_000
LABELS: tuple[str, ...] = ("base", "local")
"""``train wisv --labels`` choices (module docstring)."""


def union(datasets: Sequence[WisvDataset], labels: str = "base") -> tuple[WisvDataset, Groups]:
    """The datasets as one (module docstring) and each renumbered prompt's group. One
    dataset with base labels is returned as it is."""
    if not datasets:
        raise ValueError("no datasets")
    if labels not in LABELS:
        raise ValueError(f"unknown labels {labels!r}: known are {', '.join(LABELS)}")
    renumbered, groups = [], {}
    for k, data in enumerate(datasets):
        name = str(data.meta.get("dataset", "gsm8k"))
        prompts = data.prompts["prompts"].astype(np.int64)
        if prompts.size and int(prompts.max()) >= PROMPT_STRIDE:
            raise ValueError(f"prompt indices must be below {PROMPT_STRIDE}")
        offset = k * PROMPT_STRIDE if len(datasets) > 1 else 0
        for p in prompts.tolist():
            groups[offset + p] = (name, p)
        rows = {**data.rows, "prompt_index": data.rows["prompt_index"].astype(np.int64) + offset}
        if labels == "local" and "local_critical" in rows:
            rows["critical"] = rows["local_critical"]
        numbered = {**data.prompts, "prompts": prompts + offset}
        renumbered.append(dataclasses.replace(data, rows=rows, prompts=numbered))
    if len(datasets) == 1:
        return (datasets[0] if labels == "base" else renumbered[0]), groups
    meta = {**datasets[0].meta, "union": [d.meta for d in datasets]}
    return WisvDataset.concat(renumbered, meta), groups
