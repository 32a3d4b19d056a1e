"""Regression cases of the sliding-window batching defect, and the attention checks at load.

Both cases diverged from target-only decoding while padded batches took their sliding
window from cache columns instead of token positions.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("torch")

import torch

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.attention_mask import (
    AttentionLayout,
    UnsupportedAttentionError,
    attention_layout,
)
from edgespec.runtime.backends.ngram import NgramDrafter
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.drafter import GenerationResult
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyOutcome
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.testing import tiny_gemma3, tiny_llama
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.conftest import start_server
from tests.runtime.server.test_lossless_batching import oracle_greedy
from tests.runtime.server.test_server import _run_clients

S, F = "sliding_attention", "full_attention"


def test_two_sessions_with_one_and_two_draft_tokens_on_a_window_of_four() -> None:
    """The smallest case found: window 4, sliding/full/sliding; each round A sends one
    correct draft token and B two, in one ``verify_batch``."""
    key = "gemma3-sfs-w4"
    engine = VerificationEngine(
        TransformersTarget(tiny_gemma3(num_layers=3, sliding_window=4, layer_types=[S, F, S]))
    )
    prompts = {"A": (1, 2, 3, 4, 5), "B": (6, 7, 8, 9, 10)}
    drafts = {"A": 1, "B": 2}
    references = {sid: oracle_greedy(key, p, 12) for sid, p in prompts.items()}
    for sid, prompt in prompts.items():
        engine.open_session(SessionSpec(sid, "c", prompt, SamplingParams(max_new_tokens=12)))
    while not all(engine.session_finished(sid) for sid in prompts):
        calls = []
        for sid in prompts:
            if engine.session_finished(sid):
                continue
            tokens = engine.session_tokens(sid)
            done = len(tokens) - len(prompts[sid])
            draft = references[sid][done : done + max(1, min(drafts[sid], 11 - done))]
            calls.append(VerifyCall(sid, len(tokens), draft))
        outcomes = engine.verify_batch(calls)
        assert all(isinstance(o, VerifyOutcome) for o in outcomes)
    for sid, prompt in prompts.items():
        assert engine.session_tokens(sid)[len(prompt) :] == references[sid]


@pytest.fixture
def gemma_server() -> Iterator[ServerThread]:
    server = start_server(
        TransformersTarget(tiny_gemma3(num_layers=3, sliding_window=6, layer_types=[S, F, S]))
    )
    yield server
    server.stop(grace_s=0)


def test_concurrent_ngram_clients_over_grpc_match_centralized_decoding(
    gemma_server: ServerThread,
) -> None:
    server = gemma_server
    prompts = [
        tuple((5 * i + 3 * j * j) % 64 for j in range(n))
        for i, n in enumerate((7, 19, 31, 44, 52, 60))
    ]
    results = _run_clients(
        server.port,
        None,
        prompts,
        make_drafter=lambda i: NgramDrafter(),
        max_new_tokens=24,
        gammas=[1, 2, 3, 4, 5, 6],  # uneven blocks: rows padded within one pass
    )
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
    for i, (result, prompt) in enumerate(zip(results, prompts, strict=True)):
        assert isinstance(result, GenerationResult), result
        spec = SessionSpec(f"central{i}", "x", prompt, SamplingParams(max_new_tokens=24))
        central = tuple(t for chunk in verifier.generate(spec) for t in chunk)
        assert central == oracle_greedy("gemma3-sfs-w6", prompt, 24)
        assert result.output_token_ids == central, f"client {i} diverged"
    assert verifier.stats().max_batch_size > 1  # the clients really shared passes


def test_layouts_of_the_supported_models() -> None:
    assert attention_layout(tiny_llama(0)) == AttentionLayout(None, None)
    gemma = tiny_gemma3(num_layers=3, sliding_window=5, layer_types=[S, F, S])
    assert attention_layout(gemma) == AttentionLayout(frozenset({S, F}), 5)
    all_sliding = tiny_gemma3(num_layers=2, sliding_window=3, layer_types=[S, S])
    assert attention_layout(all_sliding) == AttentionLayout(frozenset({S}), 3)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"layer_types": [S, "chunked_attention", S]}, r"layer types \['chunked_attention'\]"),
        ({"use_bidirectional_attention": True}, "use_bidirectional_attention=True"),
        ({"_attn_implementation": "flash_attention_2"}, "kernel 'flash_attention_2'"),
        ({"sliding_window": None}, "no sliding_window"),
    ],
)
def test_models_that_cannot_be_masked_exactly_are_refused(
    change: dict[str, Any], message: str
) -> None:
    model = tiny_gemma3(num_layers=3, sliding_window=5, layer_types=[S, F, S])
    for name, value in change.items():
        setattr(model.config, name, value)
    with pytest.raises(UnsupportedAttentionError, match=message):
        TransformersTarget(model)


class _MaskIgnoringGemma(torch.nn.Module):
    """A causal LM whose forward drops explicit masks and builds its own from cache columns."""

    def __init__(self, inner: Any) -> None:
        super().__init__()
        self.inner = inner
        self.config = inner.config
        self.generation_config = inner.generation_config
        self.lm_head = inner.lm_head

    def forward(self, attention_mask: Any = None, **kwargs: Any) -> Any:
        return self.inner(**kwargs)


def test_a_model_that_ignores_explicit_masks_fails_the_load_probe() -> None:
    model = _MaskIgnoringGemma(tiny_gemma3(num_layers=3, sliding_window=4, layer_types=[S, F, S]))
    with pytest.raises(UnsupportedAttentionError, match="do not reproduce its own logits"):
        TransformersTarget(model, blocked_head_logits=False)
