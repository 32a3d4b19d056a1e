"""Token trees on one llama.cpp sequence: each node decoded on top of its ancestors only.

llama.cpp's sequences give each token one history, so a tree's nodes are walked in index
order (every parent comes before its children): the sequence is trimmed back to the
longest common path with the node's own path (``llama_memory_seq_rm``) and the rest of the
path decoded, logits for the node only. A child decoded right after its parent costs one
single-token decode. Batch-invariance makes every node's logits the same bits as in any
other arrangement, so the verdicts are those of target-only decoding. Afterwards
:func:`keep_path` leaves the sequence as the prefix plus the accepted path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from edgespec.core.tree import path_to
from edgespec.runtime.backends.llamacpp_context import LlamaContext


@dataclass(frozen=True, slots=True)
class TreeTail:
    """A decoded tree hanging off cell ``base`` of a sequence: its node tokens and parents,
    and the node path the sequence holds now (cells ``base ..``)."""

    base: int
    tokens: tuple[int, ...]
    parents: tuple[int, ...]
    held: tuple[int, ...]


def decode_tree(
    ctx: LlamaContext, seq: int, base: int, tokens: Sequence[int], parents: Sequence[int]
) -> tuple[npt.NDArray[np.float32], TreeTail]:
    """Every node's logits (one row per node, in index order) and what the sequence holds
    after; the sequence holds exactly ``base`` cells on entry."""
    held: tuple[int, ...] = ()
    rows = []
    for node in range(len(tokens)):
        path = path_to(parents, node)
        common = 0
        while common < min(len(held), len(path) - 1) and held[common] == path[common]:
            common += 1
        if common < len(held):
            ctx.trim(seq, base + common)
        rest = path[common:]
        last = len(rest) - 1
        entries = [(tokens[n], base + common + j, seq, j == last) for j, n in enumerate(rest)]
        logits, _ = ctx.decode(entries)
        rows.append(logits[0])
        held = path
    return np.stack(rows), TreeTail(base, tuple(tokens), tuple(parents), held)


def keep_path(ctx: LlamaContext, seq: int, tail: TreeTail, nodes: Sequence[int]) -> int:
    """Leave the sequence as the tree's prefix plus ``nodes`` (a path from depth 1 down,
    checked); the sequence's new length."""
    nodes = tuple(nodes)
    if nodes and path_to(tail.parents, nodes[-1]) != nodes:
        raise ValueError(f"nodes {list(nodes)} are no path from the tree's root")
    common = 0
    while common < min(len(tail.held), len(nodes)) and tail.held[common] == nodes[common]:
        common += 1
    ctx.trim(seq, tail.base + common)
    rest = nodes[common:]
    if rest:
        start = tail.base + common
        ctx.decode([(tail.tokens[n], start + j, seq, False) for j, n in enumerate(rest)])
    return tail.base + len(nodes)
