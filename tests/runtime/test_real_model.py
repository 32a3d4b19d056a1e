"""Real target (Gemma 3 270M, sliding-window attention): slow, EDGESPEC_SLOW=1 only."""

from __future__ import annotations

import json

import pytest

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.ngram import NgramDrafter
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.wire.inprocess import speculative_generate, target_greedy_decode
from tests.runtime.real_gemma import gemma_or_skip


@pytest.mark.slow
def test_gemma_backend_equals_generate_beyond_the_sliding_window() -> None:
    import torch

    from edgespec.datasets.prompts import prompt_dir
    from edgespec.models.loading import load_model

    loaded = gemma_or_skip()
    model, tokenizer = loaded.model, loaded.tokenizer
    path = prompt_dir() / "gsm8k_test.jsonl"
    text = " ".join(json.loads(line)["prompt"] for line in path.read_text().splitlines()[:12])
    prompt = tuple(tokenizer(text)["input_ids"])[:700]  # longer than the 512-token window
    target = TransformersTarget(model)
    mine = target_greedy_decode(target, prompt, 10)
    ids = torch.tensor([prompt])
    with torch.no_grad():
        out = model.generate(
            ids, attention_mask=torch.ones_like(ids), max_new_tokens=10, do_sample=False
        )
    assert list(mine) == out[0, len(prompt) :].tolist()
    sd = speculative_generate(target, NgramDrafter(), prompt, 4, SamplingParams(max_new_tokens=10))
    assert sd.output_token_ids == mine
    # a token tree beyond the window: explicit masks must window the sliding layers right
    from edgespec.runtime.backends.tree_draft import TreeDraft

    draft = load_model("gemma3-270m-draft").model
    tree = speculative_generate(
        target, TreeDraft(draft), prompt, 4, SamplingParams(max_new_tokens=10)
    )
    assert tree.output_token_ids == mine
    assert any(r.num_drafted > 4 for r in tree.rounds)


@pytest.mark.slow
def test_gemma_over_grpc_with_uneven_drafts_across_the_window_matches_centralized() -> None:
    """4 concurrent n-gram clients on the real target, 1/2/3/5 draft tokens a round, their
    contexts crossing Gemma's 512-token sliding window while they share padded passes."""
    from edgespec.datasets.prompts import prompt_dir
    from edgespec.runtime.messages import SessionSpec
    from edgespec.runtime.wire.grpc_client import RemoteVerifier
    from tests.runtime.conftest import start_server
    from tests.runtime.server.test_server import _run_clients

    loaded = gemma_or_skip()
    model, tokenizer = loaded.model, loaded.tokenizer
    lines = (prompt_dir() / "cnndm_test.jsonl").read_text().splitlines()
    articles = [tuple(tokenizer(json.loads(line)["prompt"])["input_ids"]) for line in lines]
    long_ones = [a for a in articles if len(a) >= 505]
    prompts = [a[:n] for a, n in zip(long_ones, (490, 500, 496, 505), strict=False)]
    assert [len(p) for p in prompts] == [490, 500, 496, 505], "CNN/DM articles too short"
    max_new = 32
    server = start_server(TransformersTarget(model))
    try:
        verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
        central = []
        for i, prompt in enumerate(prompts):
            spec = SessionSpec(f"central{i}", "x", prompt, SamplingParams(max_new_tokens=max_new))
            central.append(tuple(t for chunk in verifier.generate(spec) for t in chunk))
        results = _run_clients(
            server.port,
            None,
            prompts,
            make_drafter=lambda i: NgramDrafter(),
            max_new_tokens=max_new,
            gammas=[1, 2, 3, 5],
        )
        for i, result in enumerate(results):
            assert not isinstance(result, BaseException), result
            assert result.output_token_ids == central[i], f"client {i} diverged"
        assert any(r.batch_size > 1 for res in results for r in res.rounds)
    finally:
        server.stop(grace_s=0)
