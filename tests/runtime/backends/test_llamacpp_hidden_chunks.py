"""A ``return_hidden`` pass on a llama.cpp target decodes its embeddings-on tokens
:data:`~edgespec.runtime.backends.llamacpp_batch.HIDDEN_CHUNK_ROWS` per ``llama_decode``:
with embeddings on llama.cpp computes a vocabulary-wide logit row for every token, and a
client's 2,048-token cold start in one batch grew its output buffer to 2 GiB of logits at
Gemma 3's 262k vocabulary. The hidden rows, logits and committed tokens are those of one
batch, bit for bit (the exact configuration is batch-invariant)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.runtime.backends.llamacpp_fixtures import SKIP_REASON, count_output_rows, tiny_gguf

pytest.importorskip("llama_cpp", reason=SKIP_REASON)
pytest.importorskip("gguf", reason="the tiny test model is written with the gguf package")

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends import llamacpp_batch
from edgespec.runtime.backends.base import ForwardItem, ForwardOutput
from edgespec.runtime.backends.llamacpp_backend import LlamaCppTarget
from edgespec.runtime.backends.llamacpp_batch import HIDDEN_CHUNK_ROWS
from edgespec.runtime.backends.llamacpp_context import LlamaCppSettings
from edgespec.runtime.messages import SessionSpec, VerifyOutcome
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.server.test_engine import _verify

PROMPT = tuple(int(t) for t in np.random.default_rng(1).integers(3, 64, 200))
MAX_NEW = 12
ONE_BATCH = 10**6  # HIDDEN_CHUNK_ROWS for the reference: every token in one decode call


@pytest.fixture(scope="module")
def target() -> LlamaCppTarget:
    return LlamaCppTarget(LlamaCppSettings(tiny_gguf(0), 4, 512, threads=1))


@pytest.fixture
def output_rows(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The output rows each ``llama_decode`` call asks of llama.cpp (with embeddings on,
    every token: tests/runtime/backends/test_llamacpp_semantic_rows.py)."""
    return count_output_rows(monkeypatch)


def _cold_start(target: LlamaCppTarget) -> ForwardOutput:
    return target.forward([ForwardItem(None, 0, PROMPT, 4, want_hidden=True)])[0]


def test_a_return_hidden_cold_start_asks_for_at_most_a_chunk_of_rows_per_call(
    target: LlamaCppTarget, output_rows: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    chunked = _cold_start(target)
    assert HIDDEN_CHUNK_ROWS == 64
    assert output_rows == [64, 64, 64, 8]
    output_rows.clear()
    monkeypatch.setattr(llamacpp_batch, "HIDDEN_CHUNK_ROWS", ONE_BATCH)
    whole = _cold_start(target)
    assert output_rows == [len(PROMPT)]  # what it asked for before
    assert chunked.hidden is not None and whole.hidden is not None
    assert chunked.hidden.shape == (len(PROMPT), 64)
    assert np.array_equal(chunked.hidden, whole.hidden)
    assert np.array_equal(chunked.logits, whole.logits)
    assert chunked.logits.shape == (4, 64)


def test_a_chunked_mixed_pass_gives_each_item_its_own_rows(target: LlamaCppTarget) -> None:
    """A plain item and two ``return_hidden`` ones whose tokens straddle chunk borders get
    the rows each gets alone."""
    items = [ForwardItem(None, 0, PROMPT[:100], 4, want_hidden=True),
             ForwardItem(None, 0, PROMPT[:30], 2),
             ForwardItem(None, 0, PROMPT[50:], 3, want_hidden=True)]  # fmt: skip
    alone = [_rows(target.forward([item])[0]) for item in items]  # each KV freed after
    together = [_rows(out) for out in target.forward(items)]
    for item, (logits, hidden), (want_logits, want_hidden) in zip(
        items, together, alone, strict=True
    ):
        assert np.array_equal(logits, want_logits)
        assert (hidden is None) is (want_hidden is None) is (not item.want_hidden)
        if hidden is not None and want_hidden is not None:
            assert np.array_equal(hidden, want_hidden)


def _rows(out: ForwardOutput) -> tuple[Any, Any]:
    return np.asarray(out.logits), out.hidden


def _generate(target: LlamaCppTarget) -> list[VerifyOutcome]:
    """A ``return_hidden`` session without a prefix cache (every round forwards its whole
    context, 200+ tokens) decodes MAX_NEW tokens in rounds of 3, one drafted token wrong."""
    engine = VerificationEngine(target, prefix_cache=False)
    sampling = SamplingParams(max_new_tokens=MAX_NEW)
    engine.open_session(SessionSpec("h", "c", PROMPT, sampling, return_hidden=True))
    reference = target_greedy_decode(target, PROMPT, MAX_NEW)
    outcomes: list[VerifyOutcome] = []
    while not engine.session_finished("h"):
        done = len(engine.session_tokens("h")) - len(PROMPT)
        draft = list(reference[done : done + 3])
        draft[-1] = (draft[-1] + 1) % 64 if len(draft) == 3 else draft[-1]
        outcomes.append(_verify(engine, "h", tuple(draft)))
    tokens = engine.session_tokens("h")
    assert tokens == PROMPT + reference
    return outcomes


def test_a_chunked_generation_commits_the_tokens_and_rows_of_one_batch(
    target: LlamaCppTarget, output_rows: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    chunked = _generate(target)
    assert max(output_rows) == HIDDEN_CHUNK_ROWS
    output_rows.clear()
    monkeypatch.setattr(llamacpp_batch, "HIDDEN_CHUNK_ROWS", ONE_BATCH)
    whole = _generate(target)
    assert max(output_rows) > len(PROMPT)
    assert [o.committed_token_ids for o in chunked] == [o.committed_token_ids for o in whole]
    for a, b in zip(chunked, whole, strict=True):
        assert a.target_hidden is not None and b.target_hidden is not None
        assert a.target_hidden_start == b.target_hidden_start
        assert np.array_equal(a.target_hidden, b.target_hidden)
