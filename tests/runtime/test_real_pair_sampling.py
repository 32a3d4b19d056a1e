"""The shipped pair (Gemma 3 270M and its distilled draft) sampling at the default window,
through `edgespec draft` and through the OpenAI endpoint with the official client
(completions and chat, Gemma 3's chat format); a greedy chat reply equals the target's own
greedy continuation of the templated prompt, cut at the end of the turn. Slow:
EDGESPEC_SLOW=1 only."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from edgespec.core.types import SamplingParams
from edgespec.runtime.messages import SessionSpec
from tests.runtime.real_gemma import gemma_or_skip

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def gemma() -> Iterator[tuple[Any, Any]]:
    """A verification server on Gemma 3 270M (default settings) and the loaded target."""
    from edgespec.runtime.backends.transformers_backend import TransformersTarget
    from tests.runtime.conftest import start_server

    loaded = gemma_or_skip()
    server = start_server(TransformersTarget(loaded.model))
    yield server, loaded
    server.stop(grace_s=0)


def test_edgespec_draft_samples_at_the_default_window(
    gemma: tuple[Any, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    from edgespec.cli import main

    server, _ = gemma
    argv = ["draft", "--server", f"127.0.0.1:{server.port}", "--draft", "gemma3-270m-draft",
            "--prompt", "Water boils at", "--max-new-tokens", "8", "--temperature", "0.8",
            "--seed", "1"]  # fmt: skip
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert out.strip() and "8 tokens" in err and "RESOURCE_EXHAUSTED" not in err


@pytest.fixture(scope="module")
def client(gemma: tuple[Any, Any]) -> Iterator[Any]:
    openai = pytest.importorskip("openai")
    from edgespec.config import from_dict
    from edgespec.models.loading import load_model
    from edgespec.runtime.edge.config import DrafterConfig
    from edgespec.runtime.openai_api.app import ApiConfig, build_app
    from edgespec.runtime.openai_api.edge_setup import EdgeSetup
    from edgespec.runtime.openai_api.serve import ApiThread
    from edgespec.runtime.wire.grpc_client import RemoteVerifier

    server, loaded = gemma
    address = f"127.0.0.1:{server.port}"
    config = from_dict(DrafterConfig, {"server": address, "draft": "gemma3-270m-draft"})
    draft = load_model("gemma3-270m-draft").model
    setup = EdgeSetup(config, draft, loaded.tokenizer, 262_144, 24, (RemoteVerifier(address),))
    api = ApiThread(build_app(setup, ApiConfig("gemma3-270m")), "127.0.0.1").start()
    yield openai.OpenAI(
        base_url=f"http://127.0.0.1:{api.port}/v1", api_key="unused", max_retries=0, timeout=300
    )
    api.stop()


def test_completions_sample_at_the_default_window(client: Any) -> None:
    reply = client.completions.create(
        model="gemma3-270m", prompt="Water boils at", max_tokens=8, temperature=0.8, seed=1
    )
    assert reply.choices[0].text and reply.usage.completion_tokens == 8


def test_chat_samples_with_gemmas_format(client: Any) -> None:
    messages = [{"role": "user", "content": "Name a colour."}]
    reply = client.chat.completions.create(
        model="gemma3-270m", messages=messages, max_tokens=12, temperature=0.8, seed=2
    )
    assert reply.choices[0].message.content is not None
    # <bos> <start_of_turn> user \n Name a colour . <end_of_turn> \n <start_of_turn> model \n
    assert reply.usage.prompt_tokens == 13


def test_a_greedy_chat_reply_is_the_targets_own(client: Any, gemma: tuple[Any, Any]) -> None:
    from edgespec.models.chat_templates import end_of_turn_ids
    from edgespec.runtime.wire.grpc_client import RemoteVerifier

    server, loaded = gemma
    tokenizer = loaded.tokenizer
    messages = [{"role": "system", "content": "Answer in one word."},
                {"role": "user", "content": "What colour is the sky?"}]  # fmt: skip
    reply = client.chat.completions.create(
        model="gemma3-270m", messages=messages, max_tokens=16, temperature=0
    )
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    ids = tuple(tokenizer(text, add_special_tokens=False)["input_ids"])
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
    spec = SessionSpec("chat-oracle", "test", ids, SamplingParams(max_new_tokens=16))
    greedy = [t for chunk in verifier.generate(spec) for t in chunk]
    ends = end_of_turn_ids(tokenizer)
    cut = next((i for i, t in enumerate(greedy) if t in ends), len(greedy))
    assert reply.choices[0].message.content == tokenizer.decode(
        greedy[:cut], skip_special_tokens=True
    )


def test_a_penalized_greedy_completion_is_the_targets_own(
    client: Any, gemma: tuple[Any, Any]
) -> None:
    """The draft proposes from its rows biased and penalized as the request asks
    (runtime/backends/draft_shaping.py, through the trimmed draft's 8,192 columns of the
    262,144-token vocabulary); the text is still the target's own penalized greedy text, as
    centralized decoding on the server gives it."""
    from edgespec.runtime.wire.grpc_client import RemoteVerifier

    server, loaded = gemma
    prompt = "The history of the Roman Empire began"
    reply = client.completions.create(
        model="gemma3-270m", prompt=prompt, max_tokens=24, temperature=0,
        extra_body={"repetition_penalty": 1.3, "frequency_penalty": 0.5},
        logit_bias={"506": -100},
    )  # fmt: skip
    ids = tuple(loaded.tokenizer(prompt)["input_ids"])
    sampling = SamplingParams(max_new_tokens=24, repetition_penalty=1.3, frequency_penalty=0.5,
                              logit_bias=((506, -100.0),))  # fmt: skip
    spec = SessionSpec("penalized-oracle", "test", ids, sampling)
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
    centralized = [t for chunk in verifier.generate(spec) for t in chunk]
    assert reply.choices[0].text == loaded.tokenizer.decode(centralized)
    assert 506 not in centralized and reply.usage.completion_tokens == 24
