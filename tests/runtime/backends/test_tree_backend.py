"""Token trees in the transformers target: every node gets the logits of its own path."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from edgespec.core.tree import path_to  # noqa: E402
from edgespec.runtime.backends.base import ForwardItem  # noqa: E402
from edgespec.runtime.backends.transformers_backend import TransformersTarget  # noqa: E402
from edgespec.runtime.testing import tiny_gemma3, tiny_llama  # noqa: E402

PARENTS = (-1, -1, 0, 0, 2, 1, 5)
NODES = (5, 9, 14, 3, 27, 9, 30)


@pytest.fixture(scope="module", params=["llama", "gemma3"])
def backend(request: pytest.FixtureRequest) -> TransformersTarget:
    # Gemma 3: three layers, the middle one global, a sliding window of 6 tokens
    layer_types = ["sliding_attention", "full_attention", "sliding_attention"]
    gemma = tiny_gemma3(num_layers=3, sliding_window=6, layer_types=layer_types)
    model = tiny_llama(seed=0) if request.param == "llama" else gemma
    return TransformersTarget(model)


def _last_logits(backend: TransformersTarget, seq: tuple[int, ...]) -> np.ndarray:
    row: np.ndarray = backend.forward([ForwardItem(None, 0, seq, 1)])[0].logits[0]
    return row


def _check_nodes(backend: TransformersTarget, context: tuple[int, ...], logits: np.ndarray) -> None:
    """Row 0 is the root (after ``context``), row i + 1 node i's path."""
    np.testing.assert_allclose(logits[0], _last_logits(backend, context), rtol=1e-4, atol=1e-4)
    for node in range(len(NODES)):
        path = tuple(NODES[i] for i in path_to(PARENTS, node))
        expected = _last_logits(backend, context + path)
        np.testing.assert_allclose(logits[node + 1], expected, rtol=1e-4, atol=1e-4)


def test_cold_start_tree_matches_each_path(backend: TransformersTarget) -> None:
    context = tuple(range(1, 12))  # longer than gemma3's window of 6
    item = ForwardItem(None, 0, context + NODES, len(NODES) + 1, tree_parents=PARENTS)
    out = backend.forward([item])[0]
    _check_nodes(backend, context, out.logits)


def test_tree_on_a_cached_prefix_batched_with_a_plain_item(backend: TransformersTarget) -> None:
    prompt = tuple(range(3, 13))
    cached = backend.forward([ForwardItem(None, 0, prompt, 1)])[0].kv
    other_prompt = tuple(range(20, 24))
    other_kv = backend.forward([ForwardItem(None, 0, other_prompt, 1)])[0].kv
    tree_item = ForwardItem(cached, len(prompt), (40, 41, *NODES), len(NODES) + 1, False, PARENTS)
    plain_item = ForwardItem(other_kv, len(other_prompt), (7, 8, 9), 3)
    tree_out, plain_out = backend.forward([tree_item, plain_item])
    _check_nodes(backend, (*prompt, 40, 41), tree_out.logits)
    alone = backend.forward([ForwardItem(other_kv, len(other_prompt), (7, 8, 9), 3)])[0]
    np.testing.assert_allclose(plain_out.logits, alone.logits, rtol=1e-4, atol=1e-4)


def test_gather_keeps_the_accepted_path(backend: TransformersTarget) -> None:
    prompt = tuple(range(2, 10))
    item = ForwardItem(None, 0, prompt + NODES, len(NODES) + 1, tree_parents=PARENTS)
    out = backend.forward([item])[0]
    path = path_to(PARENTS, 6)  # nodes 1, 5, 6
    keep = list(range(len(prompt))) + [len(prompt) + i for i in path]
    kv = backend.gather(out.kv, keep)
    assert kv[0][0].shape[2] == len(keep)
    seq = prompt + tuple(NODES[i] for i in path)
    nxt = backend.forward([ForwardItem(kv, len(seq), (33,), 1)])[0]
    expected = _last_logits(backend, (*seq, 33))
    np.testing.assert_allclose(nxt.logits[0], expected, rtol=1e-4, atol=1e-4)
    assert backend.gather(out.kv, range(5))[0][0].shape[2] == 5  # a prefix is a crop


def test_tree_items_are_validated() -> None:
    with pytest.raises(ValueError, match="at least one new token before it"):
        ForwardItem(None, 0, (1, 2), 2, tree_parents=(-1, 0))
    with pytest.raises(ValueError, match="node 1 has parent 3"):
        ForwardItem(None, 0, (1, 2, 3), 2, tree_parents=(-1, 3))
