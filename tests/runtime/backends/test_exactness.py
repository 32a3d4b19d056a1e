"""The transformers target's exact numerics: batched passes give the same bits as one token
at a time (hypothesis draws the batches), the load-time self-check refuses a model that is
not batch-invariant unless the lossy mode is chosen by name, and names what differed."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from edgespec.runtime.backends.base import ForwardItem
from edgespec.runtime.backends.exactness import (
    InexactBackendError,
    exactness_problem,
    probe_length,
)
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.testing import tiny_gemma3, tiny_llama

WINDOW = 6


@pytest.fixture(scope="module")
def llama() -> TransformersTarget:
    return TransformersTarget(tiny_llama(3, vocab_size=512))


@pytest.fixture(scope="module")
def gemma() -> TransformersTarget:
    types = ["sliding_attention", "full_attention"]
    return TransformersTarget(tiny_gemma3(num_layers=2, sliding_window=WINDOW, layer_types=types))


def _alone(target: TransformersTarget, tokens: tuple[int, ...]) -> tuple[Any, np.ndarray]:
    """(KV after ``tokens``, their logits), decoded one token at a time."""
    kv, rows = None, list[np.ndarray]()
    for i, token in enumerate(tokens):
        out = target.forward([ForwardItem(kv, i, (token,), 1)])[0]
        kv, rows = out.kv, [*rows, out.logits[0]]
    return kv, np.stack(rows) if rows else np.zeros((0, target.vocab_size), np.float32)


_ROWS = st.lists(
    st.tuples(
        st.lists(st.integers(1, 60), min_size=0, max_size=14),  # cached tokens
        st.lists(st.integers(1, 60), min_size=1, max_size=6),  # new tokens
    ),
    min_size=1,
    max_size=5,
)


@pytest.mark.parametrize("name", ["llama", "gemma"])
@settings(max_examples=15, deadline=None)
@given(rows=_ROWS)
def test_a_batched_pass_equals_one_token_at_a_time_bit_for_bit(
    name: str, rows: list[tuple[list[int], list[int]]], request: pytest.FixtureRequest
) -> None:
    target: TransformersTarget = request.getfixturevalue(name)
    items, expected = [], []
    for cached, new in rows:
        kv, _ = _alone(target, tuple(cached))
        items.append(ForwardItem(kv, len(cached), tuple(new), len(new)))
        expected.append(_alone(target, tuple(cached + new))[1][len(cached) :])
    for out, want in zip(target.forward(items), expected, strict=True):
        assert np.array_equal(out.logits, want)


def test_the_exact_mode_passes_its_self_check_past_the_window(gemma: TransformersTarget) -> None:
    assert gemma.numerics == "exact" and gemma.inexactness is None
    assert probe_length(WINDOW, 4096) == 12 and probe_length(40, 4096) == 46
    assert exactness_problem(gemma, probe_length(40, 4096)) is None  # cached past the window


@pytest.mark.parametrize("name", ["llama", "gemma"])
def test_the_probes_pass_without_logits_leaves_a_full_passs_kv(
    name: str, request: pytest.FixtureRequest
) -> None:
    """The probe skips the LM head where no comparison reads the logits: its one-token
    passes leave the KV of full passes, bit for bit, past the window; a pass that leaves
    another KV (the next token's) is caught."""
    target: TransformersTarget = request.getfixturevalue(name)
    vocab = target.vocab_size
    tokens = tuple((7 * i + 3) % vocab for i in range(3 * WINDOW))
    full, _ = _alone(target, tokens)
    kv = None
    for i, token in enumerate(tokens):
        kv = target._extend(kv, i, token)
    assert kv is not None and len(kv) == len(full)
    for (k, v), (k_full, v_full) in zip(kv, full, strict=True):
        assert torch.equal(k, k_full) and torch.equal(v, v_full)
    length = probe_length(2 * WINDOW, 4096)
    assert exactness_problem(target, length, extend=target._extend) is None
    shifted = exactness_problem(
        target, length, extend=lambda kv, n, t: target._extend(kv, n, t + 1)
    )
    assert shifted is not None and shifted.shape == "a cold block"


class _RowCountBias(torch.nn.Module):
    """A final norm that adds 1e-6 × (token rows in the pass): not batch-invariant by design."""

    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.inner(hidden)
        return out + 1e-6 * hidden.shape[0] * hidden.shape[1]


def _variant_model() -> Any:
    model = tiny_llama(5)
    model.model.norm = _RowCountBias(model.model.norm)
    return model


def test_a_model_that_is_not_batch_invariant_is_refused_unless_lossy_by_name() -> None:
    message = (
        r"the transformers target is not batch-invariant on cpu in float32 \(a cold block: "
        r"max \|Δlogit\| \S+ against one token at a time, \d of 2 argmax flips\); refusing "
        r"to serve approximately \(the lossy mode must be chosen by name: --backend "
        r"transformers-lossy\)"
    )
    with pytest.raises(InexactBackendError, match=message):
        TransformersTarget(_variant_model())
    lossy = TransformersTarget(_variant_model(), numerics="lossy")
    assert lossy.inexactness is not None
    assert lossy.inexactness.shape == "a cold block" and lossy.inexactness.num_rows == 2
    assert lossy.inexactness.max_abs_delta > 0
    assert re.fullmatch(
        r"a cold block: max \|Δlogit\| .* of 2 argmax flips", str(lossy.inexactness)
    )


def test_numerics_must_be_named() -> None:
    with pytest.raises(
        ValueError, match=r"numerics must be one of \('exact', 'lossy'\), got 'fast'"
    ):
        TransformersTarget(tiny_llama(0), numerics="fast")  # type: ignore[arg-type]


def test_a_larger_row_multiple_is_exact_too_and_a_bad_one_is_refused() -> None:
    assert TransformersTarget(tiny_llama(3, vocab_size=512), row_multiple=16).inexactness is None
    with pytest.raises(ValueError, match="row_multiple must be >= 1, got 0"):
        TransformersTarget(tiny_llama(0), row_multiple=0)


def test_each_one_token_pass_of_the_probe_is_told(target: TransformersTarget) -> None:
    """A first start's probe was minutes of one silent stage: ``on_pass`` hears each of
    its one-token passes (those without logits too), in order, with their number."""
    told: list[tuple[int, int]] = []
    assert (
        exactness_problem(target, 12, extend=target._extend, on_pass=lambda *d: told.append(d))
        is None
    )
    assert told == [(done, 12 + 5) for done in range(1, 18)]  # the sequence, then the side one
