"""Seeded draws from torch's generators that leave the process's as they were."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def torch_seeded(seed: int) -> Iterator[None]:
    """Inside, torch's default generators (the CPU's and each CUDA device's) start from
    ``seed``, as after ``torch.manual_seed(seed)``: a model's initial weights and its dropout
    masks drawn inside are those of that seed. After, they are as they were before: a
    library call seeds nothing for its caller (no global seeding)."""
    import torch

    with torch.random.fork_rng():
        torch.manual_seed(seed)
        yield
