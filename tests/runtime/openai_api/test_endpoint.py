"""The endpoint end to end with the official ``openai`` client: outputs equal target-only
greedy decoding, streamed or not, plain or chat; ``stop``, ``max_tokens``, ``echo`` and
concurrent requests (the sampling fields: test_sampling_requests.py; a client that
leaves: test_leaving.py)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.openai_api.conftest import MODEL, word_tokenizer

TOKENIZER = word_tokenizer(64)


def _oracle(target: TransformersTarget, prompt: tuple[int, ...], n: int) -> str:
    return str(TOKENIZER.decode(list(target_greedy_decode(target, prompt, n))))


def _ids(prompt: str) -> tuple[int, ...]:
    return tuple(TOKENIZER(prompt)["input_ids"])


def test_models_lists_the_served_model(client: Any) -> None:
    assert [m.id for m in client.models.list().data] == [MODEL]


def test_models_retrieves_the_served_model_and_no_other(client: Any) -> None:
    """``client.models.retrieve`` was a 404 for the served model too."""
    import openai

    served = client.models.retrieve(MODEL)
    assert (served.id, served.object) == (MODEL, "model")
    with pytest.raises(openai.NotFoundError) as info:
        client.models.retrieve("gpt-9")
    body: Any = info.value.body
    assert (body["code"], body["param"]) == ("model_not_found", "model")
    assert (
        body["message"]
        == 'the model "gpt-9" does not exist; this endpoint serves "tiny" (see /v1/models)'
    )


def test_completion_is_lossless_streamed_or_not(client: Any, target: TransformersTarget) -> None:
    prompt = "w5 w6 w7"
    expected = _oracle(target, _ids(prompt), 12)
    whole = client.completions.create(model=MODEL, prompt=prompt, max_tokens=12)
    assert whole.choices[0].text == expected
    assert whole.choices[0].finish_reason == "length"
    assert (whole.usage.prompt_tokens, whole.usage.completion_tokens) == (3, 12)
    chunks = list(client.completions.create(model=MODEL, prompt=prompt, max_tokens=12,
                                            stream=True))  # fmt: skip
    assert "".join(c.choices[0].text for c in chunks) == expected
    assert len(chunks) > 2  # streamed as rounds commit, not at the end
    assert chunks[-1].choices[0].finish_reason == "length"


def test_token_id_prompt_and_max_tokens(client: Any, target: TransformersTarget) -> None:
    out = client.completions.create(model=MODEL, prompt=[1, 2, 3], max_tokens=5)
    assert out.choices[0].text == _oracle(target, (1, 2, 3), 5)
    assert out.usage.completion_tokens == 5


def test_chat_uses_the_chat_template(client: Any, target: TransformersTarget) -> None:
    messages = [{"role": "system", "content": "w9"}, {"role": "user", "content": "w10 w11"}]
    expected = _oracle(target, (9, 10, 11), 10)
    out = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=10)
    assert out.choices[0].message.content == expected
    assert out.choices[0].message.role == "assistant"
    stream = client.chat.completions.create(
        model=MODEL, messages=messages, max_tokens=10, stream=True,
        stream_options={"include_usage": True},
    )  # fmt: skip
    chunks = list(stream)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == expected
    assert chunks[-1].usage.completion_tokens == 10
    roles = [c.choices[0].delta.role for c in chunks if c.choices]
    assert roles == ["assistant"] + [None] * (len(roles) - 1)  # the role once, as OpenAI does


def test_a_chat_stream_with_no_text_still_names_the_role(
    client: Any, target: TransformersTarget
) -> None:
    messages = [{"role": "system", "content": "w9"}, {"role": "user", "content": "w10 w11"}]
    first_word = f"w{target_greedy_decode(target, (9, 10, 11), 1)[0]}"
    stream = client.chat.completions.create(
        model=MODEL, messages=messages, max_tokens=10, stream=True, stop=[first_word]
    )
    deltas = [(c.choices[0].delta.role, c.choices[0].delta.content) for c in stream]
    assert deltas == [("assistant", ""), (None, None)]


def test_stop_sequence_cuts_the_text(client: Any, target: TransformersTarget) -> None:
    full = _oracle(target, (5, 6, 7), 16)
    word = f"w{target_greedy_decode(target, (5, 6, 7), 16)[5]}"
    expected = full[: full.find(word)]
    for stream in (False, True):
        out = client.completions.create(model=MODEL, prompt="w5 w6 w7", max_tokens=16,
                                        stop=[word, "zzz"], stream=stream)  # fmt: skip
        chunks = list(out) if stream else [out]
        assert "".join(c.choices[0].text for c in chunks) == expected
        assert chunks[-1].choices[0].finish_reason == "stop"


def test_stop_token_ids_end_the_text_before_the_token(
    client: Any, target: TransformersTarget
) -> None:
    """vLLM's ``stop_token_ids``: the text ends before the first of them the target commits
    (``finish_reason`` stop, the token's text not shown), streamed or not; one that never
    comes changes nothing."""
    greedy = target_greedy_decode(target, (5, 6, 7), 16)
    first = greedy.index(greedy[6])  # the first position the token is committed at
    expected = str(TOKENIZER.decode(list(greedy[:first])))
    unused = next(t for t in range(64) if t not in greedy)
    for stream in (False, True):
        stops = {"stop_token_ids": [greedy[6], unused]}
        out = client.completions.create(model=MODEL, prompt="w5 w6 w7", max_tokens=16,
                                        stream=stream, extra_body=stops)  # fmt: skip
        chunks = list(out) if stream else [out]
        assert "".join(c.choices[0].text for c in chunks) == expected
        assert chunks[-1].choices[0].finish_reason == "stop"
    out = client.completions.create(model=MODEL, prompt="w5 w6 w7", max_tokens=16,
                                    extra_body={"stop_token_ids": [unused]})  # fmt: skip
    assert (out.choices[0].text, out.choices[0].finish_reason) == (
        _oracle(target, (5, 6, 7), 16),
        "length",
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (7, "stop_token_ids must be a list of token ids (integers >= 0), got 7"),
        ([1, -1], "stop_token_ids must be a list of token ids (integers >= 0), got [1, -1]"),
        ([True], "stop_token_ids must be a list of token ids (integers >= 0), got [true]"),
        ([1.0], "stop_token_ids must be a list of token ids (integers >= 0), got [1.0]"),
        (list(range(65)), "stop_token_ids takes at most 64 token ids, got 65"),
        ([3, 64, 900], "stop_token_ids [64, 900] are outside the target's vocabulary of 64"),
    ],
)
def test_stop_token_ids_that_are_no_token_ids_are_a_400(api: Any, value: Any, message: str) -> None:
    from tests.runtime.openai_api.conftest import _error

    status, error = _error(api, {"model": MODEL, "prompt": "w1", "stop_token_ids": value})
    assert (status, error["param"], error["message"]) == (400, "stop_token_ids", message)


def test_echo_puts_the_prompt_before_the_completion(
    client: Any, api: Any, target: TransformersTarget
) -> None:
    """``echo`` (was refused): the prompt's text (token ids decoded) and then the
    completion, streamed or not; the usage counts as without it. Chat takes only false."""
    from tests.runtime.openai_api.conftest import _error

    completion = _oracle(target, (5, 6, 7), 8)
    for prompt, echoed in (("w5 w6 w7", "w5 w6 w7"), ([5, 6, 7], TOKENIZER.decode([5, 6, 7]))):
        for stream in (False, True):
            out = client.completions.create(model=MODEL, prompt=prompt, max_tokens=8,
                                            stream=stream, echo=True)  # fmt: skip
            chunks = list(out) if stream else [out]
            text = "".join(c.choices[0].text for c in chunks)
            assert text == echoed + completion, (prompt, stream)  # text as given
    plain = client.completions.create(model=MODEL, prompt="w5 w6 w7", max_tokens=8, echo=False)
    assert plain.choices[0].text == completion
    chat = {"model": MODEL, "messages": [{"role": "user", "content": "w1"}], "echo": True}
    status, error = _error(api, chat, "/v1/chat/completions")
    assert (status, error["param"], error["message"]) == (
        400, "echo", "echo: true is not supported (only null or false)")  # fmt: skip


def test_concurrent_requests_each_lossless(client: Any, target: TransformersTarget) -> None:
    prompts = [(3, 4), (20, 21, 22), (40,), (7, 8, 9, 10)]

    def one(ids: tuple[int, ...]) -> str:
        text = " ".join(f"w{i}" for i in ids)
        if ids[0] % 2:
            out = client.completions.create(model=MODEL, prompt=text, max_tokens=10)
            return str(out.choices[0].text)
        stream = client.completions.create(model=MODEL, prompt=text, max_tokens=10, stream=True)
        return "".join(c.choices[0].text for c in stream)

    with ThreadPoolExecutor(len(prompts)) as pool:
        outputs = list(pool.map(one, prompts))
    assert outputs == [_oracle(target, p, 10) for p in prompts]
