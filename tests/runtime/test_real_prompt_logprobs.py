"""Real target (Gemma 3 270M, a 262,144-token vocabulary): a prompt's log-probabilities,
scored in prefill parts across the 512-token sliding window, are the same whether a
distributed session's first verification or a centralized ``Generate``'s first chunk
returns them, and the target's own under one uncached forward pass. Slow, EDGESPEC_SLOW=1
only."""

from __future__ import annotations

import json

import pytest

from edgespec.core.sampling_params import TokenLogprobs
from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.ngram import NgramDrafter
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from tests.runtime.real_gemma import gemma_or_skip


@pytest.mark.slow
def test_both_modes_return_the_targets_prompt_log_probabilities_at_full_vocabulary() -> None:
    from edgespec.datasets.prompts import prompt_dir
    from edgespec.policies.window import StaticWindow
    from edgespec.runtime.edge.drafter import DraftOptions, generate
    from edgespec.runtime.messages import SessionSpec
    from edgespec.runtime.wire.grpc_client import RemoteVerifier
    from tests.runtime.conftest import start_server
    from tests.runtime.greedy_oracles import target_logprobs

    loaded = gemma_or_skip()
    lines = (prompt_dir() / "cnndm_test.jsonl").read_text().splitlines()
    text = " ".join(json.loads(line)["prompt"] for line in lines[:3])
    prompt = tuple(loaded.tokenizer(text)["input_ids"])[:600]  # past the 512-token window
    assert len(prompt) == 600
    target = TransformersTarget(loaded.model)
    asks = SamplingParams(max_new_tokens=4, prompt_logprobs=5)
    server = start_server(target, prefill_part_tokens=256)
    try:
        verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
        central: list[tuple[TokenLogprobs, ...]] = []
        spec = SessionSpec("central", "x", prompt, asks)
        output = tuple(t for c in verifier.generate(spec, on_prompt_logprobs=central.append)
                       for t in c)  # fmt: skip
        distributed: list[tuple[TokenLogprobs, ...]] = []
        options = DraftOptions("distributed", on_prompt_logprobs=distributed.append)
        result = generate(verifier, NgramDrafter(), prompt, asks, options, StaticWindow(3))
    finally:
        server.stop(grace_s=0)
    assert result.output_token_ids == output
    assert len(central) == len(distributed) == 1 and central[0] == distributed[0]
    assert len(central[0]) == len(prompt) - 1
    expected = target_logprobs(target, prompt[:1], prompt[1:], 5)
    for got, (logprob, top) in zip(central[0], expected, strict=True):
        assert got.logprob == pytest.approx(logprob, abs=1e-3)
        assert [t for t, _ in got.top] == [t for t, _ in top]
