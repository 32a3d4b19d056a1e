"""The endpoint end to end with the official ``openai`` client: outputs equal target-only
greedy decoding, streamed or not, plain or chat; ``stop``, ``max_tokens``, seeded
sampling and concurrent requests (a client that leaves: test_leaving.py)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.greedy_oracles import masked_greedy, penalized_greedy
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


def test_logit_bias_is_added_to_the_targets_logits(client: Any, api: Any) -> None:
    """``logit_bias`` (was refused unless empty): +100 on one token makes greedy decoding
    take it at every position; bad keys, biases and ids are 400s naming the field."""
    from tests.runtime.openai_api.conftest import _error

    out = client.completions.create(model=MODEL, prompt="w5 w6 w7", max_tokens=6,
                                    logit_bias={"9": 100})  # fmt: skip
    assert out.choices[0].text == TOKENIZER.decode([9] * 6)
    for bias, message in (
        ({"w9": 1}, 'logit_bias keys are token ids, got "w9"'),
        ({"9": 101}, 'logit_bias["9"] must be a number in [-100, 100], got 101'),
        ({"9": True}, 'logit_bias["9"] must be a number in [-100, 100], got true'),
        ({"64": 1}, "logit_bias [64] are outside the target's vocabulary of 64"),
        ({"9": 1, "09": 2}, "logit_bias names a token twice"),
    ):
        status, error = _error(api, {"model": MODEL, "prompt": "w1", "logit_bias": bias})
        assert (status, error["param"], error["message"]) == (400, "logit_bias", message)


def test_seeded_sampling_is_reproducible(client: Any) -> None:
    def sample(seed: int) -> str:
        out = client.completions.create(model=MODEL, prompt="w1 w2", max_tokens=16,
                                        temperature=1.0, top_p=0.9, seed=seed)  # fmt: skip
        return str(out.choices[0].text)

    assert sample(7) == sample(7)
    assert len({sample(s) for s in range(4)}) > 1


def test_top_p_0_keeps_only_the_most_likely_token(
    client: Any, api: Any, target: TransformersTarget
) -> None:
    """OpenAI takes top_p in [0, 1]; 0 was a 400 here. Its limit keeps only the most likely
    token: at temperature 1 the tokens are exactly those of temperature 0, the target's
    greedy decoding, whatever the seed; below 0 and above 1 are 400s that say the range."""
    from tests.runtime.openai_api.conftest import _error

    expected = _oracle(target, (1, 2), 16)
    for seed in (1, 2):
        out = client.completions.create(model=MODEL, prompt="w1 w2", max_tokens=16,
                                        temperature=1.0, top_p=0, seed=seed)  # fmt: skip
        assert out.choices[0].text == expected
    greedy = client.completions.create(model=MODEL, prompt="w1 w2", max_tokens=16,
                                       temperature=0)  # fmt: skip
    assert greedy.choices[0].text == expected
    status, error = _error(api, {"model": MODEL, "prompt": "w1", "top_p": -0.1})
    assert (status, error["param"]) == (400, "top_p")
    assert error["message"] == "top_p must be in [0.0, 1.0], got -0.1"


def test_penalties_are_made_on_the_targets_rows(client: Any, target: TransformersTarget) -> None:
    """repetition, frequency and presence penalties (were refused unless off): the text is
    the target's greedy decoding of the penalized rows."""
    expected = TOKENIZER.decode(list(penalized_greedy(target, (1, 2), (1.3, 1.0, 0.5), 16)))
    assert expected != _oracle(target, (1, 2), 16)
    out = client.completions.create(model=MODEL, prompt="w1 w2", max_tokens=16,
                                    frequency_penalty=1.0, presence_penalty=0.5,
                                    extra_body={"repetition_penalty": 1.3})  # fmt: skip
    assert out.choices[0].text == expected


def test_min_tokens_holds_off_stop_sequences_and_stop_tokens(
    client: Any, api: Any, target: TransformersTarget
) -> None:
    """vLLM's ``min_tokens`` (was refused unless 0): a stop sequence counts only where it
    ends in the min_tokens-th token's text or later, and the server commits no stop token
    before then (the target's greedy decoding with it masked in the first rows)."""
    from tests.runtime.openai_api.conftest import _error

    greedy = target_greedy_decode(target, (5, 6, 7), 16)
    full = _oracle(target, (5, 6, 7), 16)
    word = f"w{greedy[1]}"
    after = len(TOKENIZER.decode(list(greedy[:5])))  # the 6th token's text begins here
    assert 0 <= full.find(word) < after  # without min_tokens: cut at the 2nd token
    hit = full.find(word, after - len(word) + 1)
    out = client.completions.create(model=MODEL, prompt="w5 w6 w7", max_tokens=16,
                                    stop=[word], extra_body={"min_tokens": 6})  # fmt: skip
    assert out.choices[0].text == (full if hit < 0 else full[:hit])
    masked = masked_greedy(target, (5, 6, 7), frozenset({greedy[1]}), 6, 16)
    assert masked != greedy  # the masked rows choose otherwise
    held_off = {"min_tokens": 6, "stop_token_ids": [greedy[1]]}
    out = client.completions.create(model=MODEL, prompt="w5 w6 w7", max_tokens=16,
                                    extra_body=held_off)  # fmt: skip
    ended = masked[-1] == greedy[1] and len(masked) < 16
    assert out.choices[0].text == TOKENIZER.decode(list(masked[:-1] if ended else masked))
    status, error = _error(api, {"model": MODEL, "prompt": "w1", "max_tokens": 4, "min_tokens": 5})
    assert (status, error["param"]) == (400, "min_tokens")
    assert error["message"] == "min_tokens must be in [0, max_tokens = 4], got 5"


def test_n_choices_each_as_its_own_request(client: Any, api: Any) -> None:
    """``n`` (was refused unless 1): choice i is what the same request alone gives with seed
    + i, whole or streamed (each choice's chunks tagged with its index, its role first in
    chat, a finish chunk each); usage counts the prompt once and every choice's tokens."""
    from tests.runtime.openai_api.conftest import _error

    def alone(seed: int) -> str:
        out = client.completions.create(model=MODEL, prompt="w1 w2", max_tokens=12,
                                        temperature=1.0, seed=seed)  # fmt: skip
        return str(out.choices[0].text)

    out = client.completions.create(model=MODEL, prompt="w1 w2", max_tokens=12, temperature=1.0,
                                    seed=40, n=3)  # fmt: skip
    texts = [c.text for c in sorted(out.choices, key=lambda c: c.index)]
    assert texts == [alone(40), alone(41), alone(42)] and len(set(texts)) > 1
    assert out.usage.prompt_tokens == 2 and out.usage.completion_tokens == 36
    chat: dict[str, Any] = {
        "model": MODEL,
        "messages": [{"role": "user", "content": "w1 w2"}],
        "max_tokens": 6,
        "temperature": 1.0,
        "seed": 7,
        "n": 2,
    }
    usage = {"include_usage": True}
    chunks = list(client.chat.completions.create(**chat, stream=True, stream_options=usage))
    whole = client.chat.completions.create(**chat)
    for index in (0, 1):
        mine = [c.choices[0] for c in chunks if c.choices and c.choices[0].index == index]
        assert mine[0].delta.role == "assistant"
        assert [c.finish_reason for c in mine][-1] == whole.choices[index].finish_reason
        assert "".join(c.delta.content or "" for c in mine) == whole.choices[index].message.content
    assert chunks[-1].usage.completion_tokens == whole.usage.completion_tokens
    for n in (0, 17):
        status, error = _error(api, {"model": MODEL, "prompt": "w1", "n": n})
        assert (status, error["param"], error["message"]) == (
            400,
            "n",
            f"n must be in [1, 16], got {n}",
        )


@pytest.mark.parametrize("cut", [{"top_k": 1}, {"min_p": 1.0}])
def test_a_cut_to_the_likeliest_token_is_greedy(
    client: Any, target: TransformersTarget, cut: dict[str, float]
) -> None:
    """top_k 1 and min_p 1 keep only the most likely token: at temperature 1 the text is the
    target's greedy decoding whatever the seed (the endpoint passes the cuts on to the
    server, which makes them on the target's rows; without them seeds 1..3 sample)."""
    expected = _oracle(target, (1, 2), 16)
    texts = set()
    for seed in (1, 2, 3):
        out = client.completions.create(model=MODEL, prompt="w1 w2", max_tokens=16,
                                        temperature=1.0, seed=seed, extra_body=cut)  # fmt: skip
        texts.add(out.choices[0].text)
    assert texts == {expected}


@pytest.mark.parametrize(
    ("fields", "param", "message"),
    [
        ({"top_k": 1.5}, "top_k", "top_k must be an integer, got 1.5"),
        ({"top_k": -2}, "top_k", "top_k must be -1 or 0 (every token) or a count of tokens "
                                 "below 2**32, got -2"),
        ({"min_p": 1.5}, "min_p", "min_p must be in [0.0, 1.0], got 1.5"),
        ({"top_k": 40}, "top_k", "top_k 40 does nothing at temperature 0 (greedy), this "
         "endpoint's default when a request gives none: give a temperature > 0 to sample "
         "with top_k"),
        ({"min_p": 0.1, "top_p": 0.9, "temperature": 0}, "top_p", "top_p 0.9 does nothing at "
         "temperature 0 (greedy): give a temperature > 0 to sample with top_p"),
        ({"min_p": 0.1, "temperature": 0}, "min_p", "min_p 0.1 does nothing at temperature 0 "
         "(greedy): give a temperature > 0 to sample with min_p"),
    ],
)  # fmt: skip
def test_a_cut_out_of_range_or_at_temperature_0_is_a_400(
    api: Any, fields: dict[str, Any], param: str, message: str
) -> None:
    from tests.runtime.openai_api.conftest import _error

    status, error = _error(api, {"model": MODEL, "prompt": "w1"} | fields)
    assert (status, error["param"], error["message"]) == (400, param, message)


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
