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
from transformers import LlamaConfig, LlamaForCausalLM

from edgespec.runtime.backends import batch_invariant
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


def _wide_heads_llama() -> Any:
    """Head dimension 256 without grouped queries (Gemma-7B-like heads), one layer."""
    config = LlamaConfig(
        vocab_size=128,
        hidden_size=512,
        intermediate_size=256,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        head_dim=256,
        bos_token_id=None,
        pad_token_id=None,
        eos_token_id=None,
    )
    config._attn_implementation = "sdpa"
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return LlamaForCausalLM(config).eval()


def test_a_block_longer_than_a_row_chunk_is_the_same_bits_as_one_token_at_a_time() -> None:
    """A 10-token block, and a 5-token follow-up beside a 12-token cold start, at head
    dimension 256: the attention's products took the pass's longest block as their row
    count, and on an AVX-512 CPU those of 16 rows gave other bits than those of 8."""
    target = TransformersTarget(_wide_heads_llama())
    assert target.inexactness is None
    seq = tuple((5 * i + 1) % 128 for i in range(30))
    kv, _ = _alone(target, seq[:20])
    _, alone = _alone(target, seq)
    block = target.forward([ForwardItem(kv, 20, seq[20:30], 10)])[0]
    assert np.array_equal(block.logits, alone[20:30])
    pair = target.forward([ForwardItem(kv, 20, seq[20:25], 5), ForwardItem(None, 0, seq[:12], 1)])
    assert np.array_equal(pair[0].logits, alone[20:25])


def test_the_probe_forms_a_block_past_one_row_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its cold block spans two of the target's row chunks, so attention products that take
    the block's row count whole are refused on a CPU where that changes the bits."""
    assert probe_length(None, 4096) == 12 and probe_length(None, 4096, 8) == 13
    assert probe_length(None, 4096, 16) == 21 and probe_length(40, 4096, 8) == 46
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(2, 16, 256, generator=g), torch.randn(2, 64, 256, generator=g).mT
    if torch.equal(torch.matmul(q[:, :8], k), torch.matmul(q, k)[:, :8]):
        pytest.skip("this CPU's GEMM gives 8 rows of 16 the bits of 8 alone at K = 256")
    whole = batch_invariant._row_chunked
    monkeypatch.setattr(
        batch_invariant, "_row_chunked", lambda left, right, _: whole(left, right, left.shape[-2])
    )
    with pytest.raises(InexactBackendError, match=r"\(a cold block: max"):
        TransformersTarget(_wide_heads_llama())


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
