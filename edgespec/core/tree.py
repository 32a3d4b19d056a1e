"""Token trees: several draft continuations verified in one target pass.

A tree of K draft tokens is given by ``parents``: node i's parent is ``parents[i]``, an
earlier node (``0 <= parents[i] < i``), or ``-1`` for a child of the root, the newest
committed token. Nodes are therefore in topological order, and a chain of K tokens is
``parents = (-1, 0, 1, ..., K - 2)``. A node's *depth* is its distance from the root
(children of the root have depth 1); the tree's depth D plays the role of the window γ.

The target forwards all K nodes at once: node i sits at position ``base + depth(i)`` and
attends to the committed tokens and to its own ancestors only (:func:`ancestor_matrix`),
so its logits are those a chain ending in i would get. Greedy verification then walks the
tree from the root (:func:`edgespec.core.speculative.greedy_verify_tree`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt


def tree_problem(parents: Sequence[int], num_tokens: int) -> str | None:
    """What is wrong with ``parents`` for a tree of ``num_tokens`` nodes, or ``None``."""
    if len(parents) != num_tokens:
        return f"draft tree has {len(parents)} parents for {num_tokens} tokens"
    for i, parent in enumerate(parents):
        if not -1 <= parent < i:
            allowed = (
                "-1 (node 0 hangs off the newest committed token)"
                if i == 0
                else (f"-1 or in 0..{i - 1}")
            )
            return f"draft tree node {i} has parent {parent}; it must be {allowed}"
    return None


def check_tree(parents: Sequence[int], num_tokens: int) -> None:
    """Raise ``ValueError`` unless ``parents`` describes a tree of ``num_tokens`` nodes."""
    problem = tree_problem(parents, num_tokens)
    if problem is not None:
        raise ValueError(problem)


def parse_branching(text: str) -> tuple[int, ...]:
    """A tree shape, branching per depth: ``"2,2,1,1"`` → (2, 2, 1, 1); entries >= 1, none
    empty (``"2,,1"`` or ``"2,1,"`` is refused, not read as (2, 1))."""
    entries = text.split(",")
    if text.strip() and not all(v.strip() for v in entries):
        raise ValueError(f"tree branching has an empty entry in {text!r} (one integer per depth)")
    try:
        values = tuple(int(v) for v in entries if v.strip())
    except ValueError:
        raise ValueError(f"tree branching must be comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise ValueError(f"tree branching needs integers >= 1, got {text!r}")
    return values


def chain_parents(num_tokens: int) -> tuple[int, ...]:
    """The parents of a plain chain of ``num_tokens`` draft tokens."""
    return tuple(range(-1, num_tokens - 1))


def is_chain(parents: Sequence[int]) -> bool:
    return all(parent == i - 1 for i, parent in enumerate(parents))


def node_depths(parents: Sequence[int]) -> tuple[int, ...]:
    """Depth of every node (1 for children of the root)."""
    depths: list[int] = []
    for parent in parents:
        depths.append(1 if parent < 0 else depths[parent] + 1)
    return tuple(depths)


def tree_depth(parents: Sequence[int]) -> int:
    """The longest root-to-leaf path: the most tokens one round can accept."""
    return max(node_depths(parents), default=0)


def children(parents: Sequence[int]) -> dict[int, list[int]]:
    """Node → its children in node order (the root is -1)."""
    kids: dict[int, list[int]] = {}
    for i, parent in enumerate(parents):
        kids.setdefault(parent, []).append(i)
    return kids


def path_to(parents: Sequence[int], node: int) -> tuple[int, ...]:
    """The nodes from depth 1 down to ``node`` (``()`` for the root, -1)."""
    path: list[int] = []
    while node >= 0:
        path.append(node)
        node = parents[node]
    return tuple(reversed(path))


def ancestor_matrix(parents: Sequence[int]) -> npt.NDArray[np.bool_]:
    """K × K: ``[i, j]`` is true when node j is node i or one of its ancestors, i.e. when
    node i may attend to node j."""
    size = len(parents)
    allowed = np.eye(size, dtype=np.bool_)
    for i, parent in enumerate(parents):
        if parent >= 0:
            allowed[i] |= allowed[parent]
    return allowed
